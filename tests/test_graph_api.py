"""The knowledge graph over real HTTP against a real daemon (api.md "The knowledge graph",
graph.md sections 2, 6 and 7, palace.md sections 4 and 8).

Facts are asserted, superseded, invalidated and linked through checkpoint jobs and read back
with their lifecycle now and `as_of` the past; spellings converge through the mentions route;
the routes' refusals carry their codes and memory modes are honoured. Entities are shared by the
whole palace, so each test names its own (a random suffix). Every wait polls with a deadline.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from jobs.replay import unit_id
from tests.support.daemon import Daemon
from tests.support.events import EventStream, Frame, expect_open
from tests.support.http import assert_error, wait_job

INVALID = "memcastle::input::invalid"
FORBIDDEN = "memcastle::mode::forbidden"
ENTITY_NOT_FOUND = "memcastle::graph::entity_not_found"
RELATIONSHIP_NOT_FOUND = "memcastle::graph::relationship_not_found"
EMPTY_LABEL = "memcastle::graph::empty_label"
DRAWER_NOT_FOUND = "memcastle::palace::drawer_not_found"
READ_ONLY = {"X-MemCastle-Mode": "read_only"}
DISABLED = {"X-MemCastle-Mode": "disabled"}
UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def tag() -> str:
    """A suffix that keeps this test's entities its own."""
    return uuid.uuid4().hex[:10]


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def checkpoint(client: httpx.Client, wing: str, *facts: dict[str, Any]) -> dict[str, Any]:
    """One item per fact, run to completion; the job with its drawers' ids."""
    items = [
        {
            "destination": "project",
            "wing": wing,
            "content": f"evidence {n}: {fact}",
            "tags": [],
            "fact": fact,
        }
        for n, fact in enumerate(facts)
    ]
    queued = ok(
        client.post("/api/jobs", json={"type": "checkpoint", "payload": {"items": items}}), 201
    )
    job = wait_job(client, queued["id"])
    job["drawers"] = [unit_id(job["id"], f"checkpoint-drawer:{n}") for n in range(len(facts))]
    return job


def find_entity(client: httpx.Client, name: str) -> dict[str, Any]:
    found = ok(client.get("/api/entities", params={"name": name}))["entities"]
    [entity] = [e for e in found if e["name"] == name]
    return entity


def relationships(client: httpx.Client, entity_id: str, **params: str) -> list[dict[str, Any]]:
    answer = ok(client.get(f"/api/entities/{entity_id}/relationships", params=params))
    return answer["relationships"]


def instant(value: str, delta: dt.timedelta = dt.timedelta(0)) -> str:
    return (dt.datetime.fromisoformat(value.replace("Z", "+00:00")) + delta).isoformat()


def states(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {row["id"]: row["lifecycle"]["state"] for row in rows}


def test_facts_asserted_superseded_and_invalidated_through_checkpoints(
    client: httpx.Client, wing_name: str, tag: str
) -> None:
    alice, berlin, paris = f"Alice {tag}", f"Berlin {tag}", f"Paris {tag}"
    added = checkpoint(
        client,
        wing_name,
        {
            "op": "add",
            "subject": {"name": alice, "kind": "Person"},
            "predicate": " Located_In ",
            "object": {"name": berlin, "kind": "place"},
            "confidence": 0.7,
        },
    )
    assert added["result"] == {"items": 1, "duplicates": 0}
    person = find_entity(client, alice)
    assert person["kind"] == "person"
    [fact] = relationships(client, person["id"])
    assert set(fact) == {
        "id",
        "from",
        "to",
        "predicate",
        "confidence",
        "valid_from",
        "valid_to",
        "assertion",
        "lifecycle",
    }
    assert (fact["from"], fact["to"], fact["predicate"], fact["confidence"]) == (
        person["id"],
        find_entity(client, berlin)["id"],
        "located_in",
        0.7,
    )
    assert fact["assertion"] == added["drawers"][0]
    assert fact["valid_to"] is None
    assert fact["lifecycle"] == {"state": "current", "links": []}

    moved = checkpoint(
        client,
        wing_name,
        {
            "op": "supersede",
            "relationship_id": fact["id"],
            "to": {"name": paris, "kind": "place"},
            "reason": "moved",
        },
    )
    assert moved["result"] == {"items": 1, "duplicates": 0}
    [current] = relationships(client, person["id"])
    assert current["to"] == find_entity(client, paris)["id"]
    assert current["assertion"] == moved["drawers"][0]
    everything = relationships(client, person["id"], include_expired="true")
    assert states(everything) == {fact["id"]: "superseded", current["id"]: "current"}
    old = next(row for row in everything if row["id"] == fact["id"])
    assert old["valid_to"] == current["valid_from"]
    [link] = old["lifecycle"]["links"]
    assert {k: link[k] for k in ("from", "to", "kind", "origin", "reason", "evidence")} == {
        "from": current["id"],
        "to": fact["id"],
        "kind": "supersedes",
        "origin": "explicit",
        "reason": "moved",
        "evidence": moved["drawers"][0],
    }
    # As of just before the correction: Berlin, current, and Paris not yet held.
    before = relationships(
        client, person["id"], as_of=instant(current["valid_from"], -dt.timedelta(microseconds=1))
    )
    assert states(before) == {fact["id"]: "current"}
    # History from either assertion, ordered by validity, each with its lifecycle.
    for start in (fact["id"], current["id"]):
        history = ok(client.get(f"/api/relationships/{start}/history"))
        assert history["relationship"] == start
        assert [(a["id"], a["lifecycle"]["state"]) for a in history["assertions"]] == [
            (fact["id"], "superseded"),
            (current["id"], "current"),
        ]
        assert history["entities"][person["id"]]["name"] == alice
    past = ok(
        client.get(
            f"/api/relationships/{current['id']}/history",
            params={"as_of": instant(fact["valid_from"])},
        )
    )
    assert [(a["id"], a["lifecycle"]["state"]) for a in past["assertions"]] == [
        (fact["id"], "current")
    ]

    retracted = checkpoint(
        client, wing_name, {"op": "invalidate", "relationship_id": current["id"]}
    )
    assert retracted["result"] == {"items": 1, "duplicates": 0}
    assert relationships(client, person["id"]) == []
    everything = relationships(client, person["id"], include_expired="true")
    assert states(everything) == {fact["id"]: "superseded", current["id"]: "invalidated"}
    later = next(row for row in everything if row["id"] == current["id"])
    [invalidates] = [x for x in later["lifecycle"]["links"] if x["kind"] == "invalidates"]
    assert invalidates["evidence"] == retracted["drawers"][0]
    # Still current as of before the retraction.
    earlier = relationships(
        client, person["id"], as_of=instant(later["valid_to"], -dt.timedelta(microseconds=1))
    )
    assert states(earlier) == {current["id"]: "current"}


def test_a_located_in_contradiction_is_conflicting_with_a_preferred(
    client: httpx.Client, wing_name: str, tag: str
) -> None:
    bob = f"Bob {tag}"
    job = checkpoint(
        client,
        wing_name,
        {
            "op": "add",
            "subject": {"name": bob, "kind": "person"},
            "predicate": "located_in",
            "object": {"name": f"Lyon {tag}", "kind": "place"},
            "confidence": 0.4,
        },
        {
            "op": "add",
            "subject": {"name": bob, "kind": "person"},
            "predicate": "located_in",
            "object": {"name": f"Nice {tag}", "kind": "place"},
            "confidence": 0.9,
        },
    )
    person = find_entity(client, bob)
    rows = relationships(client, person["id"])
    assert set(states(rows).values()) == {"current"}
    low, high = sorted(rows, key=lambda row: row["confidence"])
    linked = checkpoint(
        client,
        wing_name,
        {
            "op": "link",
            "relationship_id": low["id"],
            "other_id": high["id"],
            "kind": "contradicts",
            "reason": "one city at a time",
        },
    )
    assert linked["result"] == {"items": 1, "duplicates": 0}
    rows = relationships(client, person["id"])
    assert set(states(rows).values()) == {"conflicting"}
    for row in rows:
        assert row["lifecycle"]["preferred"] == high["id"]
        assert row["lifecycle"]["basis"] == ["explicit", "confidence"]
        [link] = row["lifecycle"]["links"]
        assert (link["kind"], link["origin"], link["reason"]) == (
            "contradicts",
            "explicit",
            "one city at a time",
        )
    # Before the link was made, neither conflicted.
    made = rows[0]["lifecycle"]["links"][0]["at"]
    before = relationships(client, person["id"], as_of=instant(made, -dt.timedelta(microseconds=1)))
    assert set(states(before).values()) == {"current"}
    assert len(job["drawers"]) == 2


def test_facts_naming_unknown_relationships_fail_their_items_only(
    client: httpx.Client, wing_name: str
) -> None:
    job = checkpoint(
        client,
        wing_name,
        {"op": "invalidate", "relationship_id": UNKNOWN},
        {
            "op": "link",
            "relationship_id": "nope",
            "other_id": UNKNOWN,
            "kind": "refines",
            "reason": "r",
        },
        {"op": "add", "subject": "s", "predicate": "p", "object": "o"},
    )
    assert job["result"]["items"] == 3
    assert [entry["index"] for entry in job["result"]["failed"]] == [0, 1]
    assert all("relationship" in entry["error"] for entry in job["result"]["failed"])
    # Every item still has its drawer.
    for drawer in job["drawers"]:
        ok(client.get(f"/api/drawers/{drawer}"))


def test_a_blank_label_is_refused_at_submission(client: httpx.Client, wing_name: str) -> None:
    for fact in (
        {"op": "add", "subject": "s", "predicate": "  ", "object": "o"},
        {"op": "add", "subject": {"name": "s", "kind": ""}, "predicate": "p", "object": "o"},
    ):
        item = {
            "destination": "general",
            "wing": wing_name,
            "content": "x",
            "tags": [],
            "fact": fact,
        }
        body = {"type": "checkpoint", "payload": {"items": [item]}}
        refused = assert_error(
            client.post("/api/jobs", json=body), 400, EMPTY_LABEL, explained=False
        )
        assert refused["error"].startswith("`payload` item 0: `fact."), refused


def file_drawer(client: httpx.Client, wing: str, content: str) -> dict[str, Any]:
    return ok(client.post(f"/api/wings/{wing}/rooms/notes/drawers", json={"content": content}), 201)


def mention(client: httpx.Client, drawer: str, name: str, kind: str, **headers: str) -> Any:
    return client.post(
        f"/api/drawers/{drawer}/mentions", json={"name": name, "kind": kind}, headers=headers
    )


def test_spellings_converge_through_mentions(
    client: httpx.Client, wing_name: str, tag: str
) -> None:
    drawers = [file_drawer(client, wing_name, f"runtime note {n} {tag}")["id"] for n in range(5)]
    spellings = [f"Node.js {tag}", f"NodeJS {tag}", f"nodejs {tag}", f"NODE.JS {tag}"]
    answers = [
        ok(mention(client, d, s, "tool"), 201) for d, s in zip(drawers, spellings, strict=False)
    ]
    assert len({a["entity"]["id"] for a in answers}) == 1
    assert [a["observation"]["rule"] for a in answers] == [
        "new",
        "normalized",
        "normalized",
        "normalized",
    ]
    entity = ok(client.get(f"/api/entities/{answers[0]['entity']['id']}"))
    assert entity["name"] == spellings[0]
    assert entity["aliases"] == spellings[1:]
    assert entity["counts"] == {"mentions": 4, "relationships": 0}
    # A one-letter typo in a long name converges too.
    typo = ok(mention(client, drawers[4], f"Nodejz {tag}", "tool"), 201)
    assert (typo["entity"]["id"], typo["observation"]["rule"]) == (entity["id"], "typo")
    listed = ok(client.get(f"/api/entities/{entity['id']}/mentions"))["mentions"]
    assert [m["drawer"]["id"] for m in listed] == drawers
    assert [m["observation"]["name"] for m in listed] == [*spellings, f"Nodejz {tag}"]
    assert all("provenance" not in m and "content" not in m["drawer"] for m in listed)
    # Idempotent: the same link again is a 200, whatever the spelling.
    again = ok(mention(client, drawers[0], f"NodeJS {tag}", "tool"), 200)
    assert (again["created"], again["observation"]["name"]) == (False, spellings[0])


def entity_frame(entity_id: str, action: str) -> Callable[[object], bool]:
    def matches(item: object) -> bool:
        return (
            isinstance(item, Frame)
            and item.event == "entity"
            and item.data.get("id") == entity_id
            and item.data.get("action") == action
        )

    return matches


def test_entity_changes_are_announced_on_the_event_stream(
    daemon: Daemon, client: httpx.Client, wing_name: str, tag: str
) -> None:
    stream = EventStream(daemon)
    try:
        assert stream.response.status_code == 200
        expect_open(stream)
        drawer = file_drawer(client, wing_name, "Kestrel is our queue.")
        linked = ok(mention(client, drawer["id"], f"Kestrel{tag}", "tool"), 201)["entity"]
        created = stream.wait(entity_frame(linked["id"], "created"), what="the entity created")
        # A change names what changed, never what it holds.
        assert created.data == {"kind": "entity", "action": "created", "id": linked["id"]}
        stream.wait(entity_frame(linked["id"], "updated"), what="the mention announced")
        ok(client.post(f"/api/entities/{linked['id']}/aliases", json={"alias": f"K{tag}"}), 201)
        stream.wait(entity_frame(linked["id"], "updated"), what="the alias announced")
    finally:
        stream.close()


def test_aliases_and_candidates(client: httpx.Client, wing_name: str, tag: str) -> None:
    drawer = file_drawer(client, wing_name, f"cache note {tag}")["id"]
    # Five characters: one edit is a candidate (similarity 0.8), never a typo match.
    redis = ok(mention(client, drawer, f"Qx{tag[:3]}", "tool"), 201)["entity"]
    other = ok(mention(client, drawer, f"Qy{tag[:3]}", "tool"), 201)["entity"]
    assert other["id"] != redis["id"]
    older = ok(client.get(f"/api/entities/{other['id']}/candidates"))
    assert [(c["entity"]["id"], c["side"]) for c in older["candidates"]] == [(redis["id"], "older")]
    assert older["candidates"][0]["similarity"] == 0.8
    newer = ok(client.get(f"/api/entities/{redis['id']}/candidates"))
    assert [(c["entity"]["id"], c["side"]) for c in newer["candidates"]] == [(other["id"], "newer")]

    alias = f"Remote Dictionary Server {tag}"
    added = ok(client.post(f"/api/entities/{redis['id']}/aliases", json={"alias": alias}), 201)
    assert added["aliases"] == [alias] and added["created"] is True
    ok(client.post(f"/api/entities/{redis['id']}/aliases", json={"alias": alias}), 200)
    elsewhere = file_drawer(client, wing_name, f"another cache note {tag}")["id"]
    via_alias = ok(mention(client, elsewhere, alias.lower(), "tool"), 201)
    assert (via_alias["entity"]["id"], via_alias["observation"]["rule"]) == (redis["id"], "alias")


def test_entity_listing(client: httpx.Client, wing_name: str, tag: str) -> None:
    drawer = file_drawer(client, wing_name, f"listing {tag}")["id"]
    for name, kind in ((f"Zeta {tag}", "tool"), (f"zeta {tag} two", "person")):
        ok(mention(client, drawer, name, kind), 201)
    found = ok(client.get("/api/entities", params={"name": f"ZETA {tag}"}))
    assert sorted(e["name"] for e in found["entities"]) == [f"Zeta {tag}", f"zeta {tag} two"]
    assert found["limit"] == 50
    people = ok(client.get("/api/entities", params={"name": tag, "kind": "person"}))
    assert [e["kind"] for e in people["entities"]] == ["person"]
    one = ok(client.get("/api/entities", params={"name": tag, "limit": 1}))
    assert len(one["entities"]) == 1 and one["limit"] == 1
    assert ok(client.get("/api/entities", params={"limit": 0}))["limit"] == 50
    assert ok(client.get("/api/entities", params={"limit": 500}))["limit"] == 200
    assert_error(client.get("/api/entities", params={"limit": -1}), 400, INVALID, explained=False)


def test_graph_overview_and_neighbourhood(client: httpx.Client, wing_name: str, tag: str) -> None:
    a, b, c = (f"{x} {tag}" for x in ("Ant", "Bee", "Cat"))
    checkpoint(
        client,
        wing_name,
        {"op": "add", "subject": a, "predicate": "knows", "object": b},
        {"op": "add", "subject": b, "predicate": "knows", "object": c},
    )
    start = find_entity(client, a)
    one = ok(client.get("/api/graph", params={"entity": start["id"]}))
    assert [e["name"] for e in one["entities"]] == [a, b]
    assert one["depth"] == 1 and len(one["relationships"]) == 1
    assert one["relationships"][0]["lifecycle"]["state"] == "current"
    two = ok(client.get("/api/graph", params={"entity": start["id"], "depth": 2}))
    assert [(e["name"], e["distance"]) for e in two["entities"]] == [(a, 0), (b, 1), (c, 2)]
    overview = ok(client.get("/api/graph"))
    assert set(overview["counts"]) == {"entities", "relationships", "mentions", "fact_links"}
    assert overview["counts"]["relationships"] >= 2
    assert_error(
        client.get("/api/graph", params={"entity": start["id"], "depth": 4}),
        400,
        INVALID,
        explained=False,
    )
    assert_error(
        client.get("/api/graph", params={"entity": UNKNOWN}), 404, ENTITY_NOT_FOUND, explained=False
    )


def test_refusals_carry_their_codes(client: httpx.Client, wing_name: str) -> None:
    for route in ("", "/relationships", "/mentions", "/candidates"):
        assert_error(
            client.get(f"/api/entities/{UNKNOWN}{route}"), 404, ENTITY_NOT_FOUND, explained=False
        )
        assert_error(client.get(f"/api/entities/not-a-uuid{route}"), 400, INVALID, explained=False)
    assert_error(
        client.post(f"/api/entities/{UNKNOWN}/aliases", json={"alias": "x"}),
        404,
        ENTITY_NOT_FOUND,
        explained=False,
    )
    assert_error(
        client.get(f"/api/relationships/{UNKNOWN}/history"),
        404,
        RELATIONSHIP_NOT_FOUND,
        explained=False,
    )
    assert_error(mention(client, UNKNOWN, "x", "tool"), 404, DRAWER_NOT_FOUND, explained=False)
    drawer = file_drawer(client, wing_name, "refusals")["id"]
    assert_error(mention(client, drawer, "x", "  "), 400, EMPTY_LABEL, explained=False)
    assert_error(mention(client, drawer, " ", "tool"), 400, INVALID, explained=False)
    assert_error(
        client.post(f"/api/drawers/{drawer}/mentions", json={"name": "x", "kind": "t", "y": 1}),
        400,
        INVALID,
        explained=False,
    )
    entity = ok(mention(client, drawer, "Refusal entity", "tool"), 201)["entity"]
    both = client.get(
        f"/api/entities/{entity['id']}/relationships",
        params={"include_expired": "true", "as_of": "2026-01-01"},
    )
    message = assert_error(both, 400, INVALID, explained=False)["error"]
    assert "as_of" in message and "include_expired" in message
    bad_instant = client.get(f"/api/entities/{entity['id']}/relationships", params={"as_of": "x"})
    assert "`as_of`" in assert_error(bad_instant, 400, INVALID, explained=False)["error"]


def test_memory_modes(client: httpx.Client, wing_name: str, tag: str) -> None:
    drawer = file_drawer(client, wing_name, f"modes {tag}")["id"]
    entity = ok(mention(client, drawer, f"Mode {tag}", "tool"), 201)["entity"]
    fact = checkpoint(
        client, wing_name, {"op": "add", "subject": entity["id"], "predicate": "p", "object": "o"}
    )
    [row] = relationships(client, entity["id"])
    assert row["assertion"] == fact["drawers"][0]
    reads = [
        "/api/entities",
        f"/api/entities/{entity['id']}",
        f"/api/entities/{entity['id']}/relationships",
        f"/api/entities/{entity['id']}/mentions",
        f"/api/entities/{entity['id']}/candidates",
        f"/api/relationships/{row['id']}/history",
        "/api/graph",
    ]
    for route in reads:
        ok(client.get(route, headers=READ_ONLY))
        assert_error(client.get(route, headers=DISABLED), 403, FORBIDDEN, explained=False)
    for headers in (READ_ONLY, DISABLED):
        assert_error(
            mention(client, drawer, f"Other {tag}", "tool", **headers),
            403,
            FORBIDDEN,
            explained=False,
        )
        aliased = client.post(
            f"/api/entities/{entity['id']}/aliases", json={"alias": "m"}, headers=headers
        )
        assert_error(aliased, 403, FORBIDDEN, explained=False)
    assert find_entity(client, entity["name"])["aliases"] == []


def test_every_graph_route_is_documented() -> None:
    from tests.support.openapi import openapi_document

    schema = openapi_document()
    for route, method in (
        ("/api/entities", "get"),
        ("/api/entities/{entity_id}", "get"),
        ("/api/entities/{entity_id}/relationships", "get"),
        ("/api/entities/{entity_id}/mentions", "get"),
        ("/api/entities/{entity_id}/candidates", "get"),
        ("/api/entities/{entity_id}/aliases", "post"),
        ("/api/drawers/{drawer_id}/mentions", "post"),
        ("/api/relationships/{relationship_id}/history", "get"),
        ("/api/graph", "get"),
    ):
        operation = schema["paths"][route][method]
        assert {"200", "401", "403", "500"} <= set(operation["responses"]), route
