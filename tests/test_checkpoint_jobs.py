"""The checkpoint, audit and repair jobs over real HTTP against a real daemon.

Checkpoint: submission (priority, the payload refused whole at submission, memory modes), where
items land, deduplication within a batch and against the room, pause and kill -9 in the middle
of a batch (never an item stored twice, every drawer under its derived id). Audit and repair: a
palace with orphan drawers (their room record deleted behind the daemon's back), the dry run,
the applied repair narrowed by `based_on_job`, and the refused `based_on_job` values.

Tests on the shared daemon each work in their own wing; tests that stop, kill or reconfigure a
daemon start one of their own. Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from jobs.replay import unit_id
from kernel.store import Store
from tests.support.daemon import Daemon
from tests.support.http import (
    Drawer,
    Job,
    assert_error,
    drawer,
    get_job,
    room_count,
    room_drawers,
    submit,
    total,
    wait_job,
    watch,
)

INVALID = "memcastle::input::invalid"
FORBIDDEN = "memcastle::mode::forbidden"
BASED_ON_INVALID = "memcastle::repair::based_on_job_invalid"
DRAWER_NOT_FOUND = "memcastle::palace::drawer_not_found"
READ_ONLY = {"X-MemCastle-Mode": "read_only"}
DISABLED = {"X-MemCastle-Mode": "disabled"}
WAIT = 20.0
# A demo step this long never ends on its own during a test.
FOREVER_MS = 60_000


# A sentence and its likely copies. The typo is near the end so that the copy keeps its start.
SENTENCE = "We deploy the backend service every Tuesday morning."
TYPO = "We deploy the backend service every Tuesady morning."
SHOUTED = "WE DEPLOY THE BACKEND SERVICE EVERY TUESDAY MORNING!"


def item(content: str, destination: str = "general", **fields: Any) -> dict[str, Any]:
    """A checkpoint item; `tags` is required, and empty unless given."""
    return {"destination": destination, "content": content, "tags": [], **fields}


def derived(job_id: str, index: int) -> str:
    return unit_id(job_id, f"checkpoint-drawer:{index}")


def run_job(client: httpx.Client, body: dict[str, Any], **headers: str) -> Job:
    return wait_job(client, submit(client, body, **headers)["id"], timeout=WAIT)


def checkpoint(client: httpx.Client, items: list[dict[str, Any]], **extra: Any) -> Job:
    """Submit a checkpoint of `items` and wait for it to complete."""
    return run_job(client, {"type": "checkpoint", "payload": {"items": items}, **extra})


def file(client: httpx.Client, wing: str, room: str, content: str, **body: Any) -> Drawer:
    response = client.post(
        f"/api/wings/{wing}/rooms/{room}/drawers", json={"content": content, **body}
    )
    assert response.status_code == 201, response.text
    return response.json()


def assert_absent(client: httpx.Client, drawer_id: str) -> None:
    assert_error(client.get(f"/api/drawers/{drawer_id}"), 404, DRAWER_NOT_FOUND)


def similar(client: httpx.Client, drawer_id: str) -> dict[str, dict[str, Any]]:
    """The drawer's likely copies by the other drawer's id."""
    response = client.get(f"/api/drawers/{drawer_id}/duplicates")
    assert response.status_code == 200, response.text
    return {link["drawer"]["id"]: link for link in response.json()["similar"]}


# Submission.


def test_checkpoint_is_queued_at_high_priority_and_emergency_at_critical(
    client: httpx.Client, wing_name: str
) -> None:
    items = [item("Always run the formatter before committing.", "preference", wing=wing_name)]
    queued = submit(client, {"type": "checkpoint", "payload": {"items": items}})
    assert queued["status"] == "queued"
    assert queued["priority"] == 75
    assert queued["requested_by"] == "http"
    assert (queued["progress"], queued["checkpoint"], queued["result"]) == (
        {"current": 0},
        {},
        None,
    )
    # The payload is stored checked and completed with its defaults.
    assert queued["kind"] == {
        "type": "checkpoint",
        "payload": {"items": [{**items[0], "source": {"kind": "manual"}}]},
    }

    done = wait_job(client, queued["id"], timeout=WAIT)
    assert done["result"] == {"items": 1, "duplicates": 0}
    assert done["progress"] == {"current": 1, "total": 1, "message": "item 1 of 1"}
    assert done["checkpoint"] == {"next_index": 1, "duplicates": 0, "failed": []}
    assert (done["attempt"], done["recovery_attempts"]) == (1, 0)
    assert (done["error"], done["error_code"]) == (None, None)

    urgent = [item("Never force-push to main.", "project", wing=wing_name)]
    emergency = submit(
        client, {"type": "checkpoint", "payload": {"items": urgent}, "emergency": True}
    )
    assert emergency["priority"] == 100
    assert emergency["kind"]["emergency"] is True
    assert wait_job(client, emergency["id"], timeout=WAIT)["result"] == {
        "items": 1,
        "duplicates": 0,
    }

    calm = [item("Tabs are four spaces wide.", "preference", wing=wing_name)]
    ordinary = submit(
        client, {"type": "checkpoint", "payload": {"items": calm}, "emergency": False}
    )
    assert ordinary["priority"] == 75
    assert "emergency" not in ordinary["kind"]
    wait_job(client, ordinary["id"], timeout=WAIT)


def test_a_json_encoded_payload_string_is_accepted(client: httpx.Client, wing_name: str) -> None:
    payload = {"items": [item("Encoded once by a careful client.", wing=wing_name, tags=["mcp"])]}
    queued = submit(client, {"type": "checkpoint", "payload": json.dumps(payload)})
    # Stored decoded, exactly as if the object had been sent.
    assert queued["kind"]["payload"] == {
        "items": [{**payload["items"][0], "source": {"kind": "manual"}}]
    }
    done = wait_job(client, queued["id"], timeout=WAIT)
    assert done["result"] == {"items": 1, "duplicates": 0}
    stored = drawer(client, derived(done["id"], 0))
    assert (stored["content"], stored["tags"]) == ("Encoded once by a careful client.", ["mcp"])


GOOD = {"destination": "general", "content": "fine", "tags": []}
ADD = {"op": "add", "subject": "s", "predicate": "p", "object": "o"}
LINK = {"op": "link", "relationship_id": "r", "other_id": "q", "kind": "confirms"}


def bad(change: dict[str, Any], fragment: str, id: str) -> Any:
    """A payload whose second item is GOOD with `change` (a None value removes the field); the
    refusal must blame item 1 and contain `fragment`."""
    second = {**GOOD, **change}
    second = {key: value for key, value in second.items() if value is not None}
    return pytest.param({"items": [GOOD, second]}, "item 1: ", fragment, id=id)


def bad_fact(fact: object, fragment: str, id: str) -> Any:
    return bad({"fact": fact}, fragment, id)


@pytest.mark.parametrize(
    ("payload", "where", "fragment"),
    [
        pytest.param(None, "", "must be an object", id="missing"),
        pytest.param([GOOD], "", "must be an object", id="a-list"),
        pytest.param(5, "", "must be an object", id="a-number"),
        pytest.param("{not json", "", "not valid JSON", id="a-string-not-json"),
        pytest.param("", "", "not valid JSON", id="an-empty-string"),
        pytest.param(json.dumps([GOOD]), "", "must be an object", id="a-json-string-not-an-object"),
        pytest.param({}, "", "at least one item", id="no-items"),
        pytest.param({"items": []}, "", "at least one item", id="empty-items"),
        pytest.param({"items": GOOD}, "", "at least one item", id="items-not-a-list"),
        pytest.param({"items": [GOOD], "extra": 1}, "", "'extra'", id="unknown-payload-key"),
        pytest.param(
            {"items": [GOOD, "text"]}, "item 1: ", "must be an object", id="item-a-string"
        ),
        pytest.param({"items": [GOOD] * 10_001}, "", "at most 10000", id="too-many-items"),
        bad({"bogus": 1}, "has an unknown key 'bogus'", id="unknown-item-key"),
        bad({"destination": None}, "`destination`", id="no-destination"),
        bad({"destination": "nowhere"}, "`destination`", id="unknown-destination"),
        bad({"destination": "Preference"}, "`destination`", id="destination-in-capitals"),
        bad({"content": None}, "`content`", id="no-content"),
        bad({"content": ""}, "`content`", id="empty-content"),
        bad({"content": " \n\t "}, "`content`", id="blank-content"),
        bad({"content": 5}, "`content`", id="content-not-text"),
        bad({"tags": None}, "`tags`", id="no-tags"),
        bad({"tags": "workflow"}, "`tags`", id="tags-a-string"),
        bad({"tags": ["ok", 1]}, "`tags`", id="tags-not-strings"),
        bad({"tags": {"a": "b"}}, "`tags`", id="tags-an-object"),
        bad({"name": str(uuid.uuid4())}, "looks like a UUID", id="name-a-uuid"),
        bad({"name": str(uuid.uuid4()).upper()}, "looks like a UUID", id="name-an-upper-uuid"),
        bad({"name": "a/../b"}, "segment", id="name-dot-dot"),
        bad({"name": "a//b"}, "segment", id="name-empty-segment"),
        bad({"name": "./a"}, "segment", id="name-dot"),
        bad({"name": "a/"}, "segment", id="name-trailing-slash"),
        bad({"name": " padded"}, "whitespace", id="name-padded"),
        bad({"name": "a\nb"}, "control character", id="name-control-char"),
        bad({"name": ""}, "non-empty", id="name-empty"),
        bad({"name": 5}, "`name`", id="name-not-text"),
        bad({"wing": "a/b"}, "contains `/`", id="wing-with-slash"),
        bad({"wing": str(uuid.uuid4())}, "looks like a UUID", id="wing-a-uuid"),
        bad({"wing": ""}, "non-empty", id="wing-empty"),
        bad({"wing": 5}, "`wing`", id="wing-not-text"),
        bad({"source": {"kind": "transcript"}}, "`source`", id="source-kind-transcript"),
        bad({"source": "manual"}, "`source`", id="source-a-string"),
        bad({"source": {"uri": 5}}, "`source.uri`", id="source-uri-not-text"),
        bad({"source": {"agent": ["a"]}}, "`source.agent`", id="source-agent-not-text"),
        bad({"source": {"path": "/x"}}, "`source`", id="source-unknown-key"),
        bad_fact("add", "`fact.op`", id="fact-a-string"),
        bad_fact({"op": "merge"}, "`fact.op`", id="fact-unknown-op"),
        bad_fact({**ADD, "confidence": 1.01}, "`fact.confidence`", id="confidence-above-1"),
        bad_fact({**ADD, "confidence": -0.01}, "`fact.confidence`", id="confidence-below-0"),
        bad_fact({**ADD, "confidence": True}, "`fact.confidence`", id="confidence-a-bool"),
        bad_fact({**ADD, "confidence": "0.5"}, "`fact.confidence`", id="confidence-a-string"),
        bad_fact(LINK, "`fact.reason`", id="link-without-reason"),
        bad_fact({**LINK, "reason": "  "}, "`fact.reason`", id="link-blank-reason"),
        bad_fact({**LINK, "reason": 5}, "`fact.reason`", id="link-reason-not-text"),
        bad_fact({**LINK, "kind": "agrees", "reason": "r"}, "`fact.kind`", id="link-bad-kind"),
    ],
)
def test_a_bad_payload_is_refused_whole_at_submission(
    client: httpx.Client, payload: object, where: str, fragment: str
) -> None:
    before = total(client, "checkpoint")
    body: dict[str, Any] = {"type": "checkpoint"}
    if payload is not None:
        body["payload"] = payload
    answer = assert_error(client.post("/api/jobs", json=body), 400, INVALID)
    assert answer["error"].startswith(f"`payload` {where}"), answer
    assert fragment in answer["error"], answer
    assert total(client, "checkpoint") == before, "a refused checkpoint was queued"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"payload": {"items": [GOOD]}, "emergency": "yes"}, "emergency"),
        ({"payload": {"items": [GOOD]}, "emergency": 1}, "emergency"),
        ({"payload": {"items": [GOOD]}, "wing": "w"}, "wing"),
        ({"payload": {"items": [GOOD]}, "requested_by": ""}, "requested_by"),
    ],
)
def test_other_checkpoint_parameters_are_validated(
    client: httpx.Client, body: dict[str, Any], field: str
) -> None:
    before = total(client, "checkpoint")
    answer = assert_error(
        client.post("/api/jobs", json={"type": "checkpoint", **body}), 400, INVALID
    )
    assert answer["error"].startswith(f"`{field}`"), answer
    assert total(client, "checkpoint") == before


def test_fact_bounds_and_every_fact_op_are_accepted(client: httpx.Client, wing_name: str) -> None:
    facts = [
        {"op": "add", "subject": "s", "predicate": "p", "object": "o", "confidence": 0},
        {"op": "add", "subject": "s", "predicate": "p", "object": "o", "confidence": 1},
        {"op": "add", "subject": "s", "predicate": "p", "object": "o", "confidence": 0.5},
        {"op": "supersede", "relationship_id": "r", "from": "a", "to": "b", "predicate": "p"},
        {"op": "invalidate", "relationship_id": "r", "reason": "it moved"},
        {"op": "link", "relationship_id": "r", "other_id": "q", "kind": "refines", "reason": "x"},
    ]
    items = [
        item(f"Fact-bearing item {n}.", wing=wing_name, fact=fact) for n, fact in enumerate(facts)
    ]
    items.append(
        item(
            "From a file.",
            wing=wing_name,
            source={"kind": "file", "uri": "file:///notes.md", "agent": "opencode"},
        )
    )
    queued = submit(client, {"type": "checkpoint", "payload": {"items": items}})
    assert [stored.get("fact") for stored in queued["kind"]["payload"]["items"]] == [
        *facts,
        None,
    ]
    done = wait_job(client, queued["id"], timeout=WAIT)
    # Every item keeps its drawer; the corrections name no relationship, so their facts fail.
    failed = done["result"].pop("failed")
    assert done["result"] == {"items": len(items), "duplicates": 0}
    unknown = "`fact.relationship_id` names no relationship (got 'r')"
    assert [entry["error"] for entry in failed] == [unknown] * 3
    sourced = drawer(client, derived(done["id"], len(facts)))
    assert sourced["source"] == {"kind": "file", "uri": "file:///notes.md", "agent": "opencode"}


def test_checkpoint_submission_is_mode_gated(client: httpx.Client, wing_name: str) -> None:
    payload = {"items": [item("Written only in full mode.", wing=wing_name)]}
    before = total(client, "checkpoint")
    for mode in ("read_only", "disabled"):
        headers = {"X-MemCastle-Mode": mode}
        plain = client.post(
            "/api/jobs", json={"type": "checkpoint", "payload": payload}, headers=headers
        )
        assert "`checkpoint`" in assert_error(plain, 403, FORBIDDEN)["error"]
        urgent = client.post(
            "/api/jobs",
            json={"type": "checkpoint", "payload": payload, "emergency": True},
            headers=headers,
        )
        assert "`emergency_checkpoint`" in assert_error(urgent, 403, FORBIDDEN)["error"]
    bogus = client.post(
        "/api/jobs",
        json={"type": "checkpoint", "payload": payload},
        headers={"X-MemCastle-Mode": "bogus"},
    )
    assert "x-memcastle-mode" in assert_error(bogus, 400, INVALID)["error"].lower()
    assert total(client, "checkpoint") == before, "a refused checkpoint was queued"
    assert client.get(f"/api/wings/{wing_name}").status_code == 404

    done = run_job(
        client, {"type": "checkpoint", "payload": payload}, **{"X-MemCastle-Mode": "full"}
    )
    assert done["result"] == {"items": 1, "duplicates": 0}


# Where items land.


def test_items_land_by_destination_with_their_provenance(
    client: httpx.Client, wing_name: str
) -> None:
    other = f"{wing_name}-override"
    items = [
        item("  I prefer short commit messages.\n", "preference", wing=wing_name, tags=["git"]),
        item("The project builds with make.", "project", wing=wing_name, name="build"),
        item("Today I fixed the flaky test.", "diary", wing=wing_name, name="2026/12/02"),
        item("Water boils at 100 C at sea level.", "general", wing=wing_name),
        item("The override wins over the destination.", "preference", wing=other),
        item("A diary entry elsewhere.", "diary", wing=other, source={"agent": "claude"}),
    ]
    done = checkpoint(client, items, requested_by="agent-7")
    assert done["requested_by"] == "agent-7"
    assert done["result"] == {"items": 6, "duplicates": 0}

    rooms = client.get(f"/api/wings/{wing_name}/rooms").json()["rooms"]
    assert {room["name"]: room["counts"]["drawers"] for room in rooms} == {
        "entries": 3,
        "diary": 1,
    }
    rooms = client.get(f"/api/wings/{other}/rooms").json()["rooms"]
    assert {room["name"]: room["counts"]["drawers"] for room in rooms} == {
        "entries": 1,
        "diary": 1,
    }
    for wing, room, index in (
        (wing_name, "entries", 0),
        (wing_name, "entries", 1),
        (wing_name, "diary", 2),
        (wing_name, "entries", 3),
        (other, "entries", 4),
        (other, "diary", 5),
    ):
        stored = drawer(client, derived(done["id"], index))
        sent = items[index]
        # Verbatim: surrounding whitespace is kept.
        assert stored["content"] == sent["content"], index
        assert stored["name"] == sent.get("name"), index
        assert stored["tags"] == sent.get("tags", []), index
        assert stored["provenance"] == {"job_id": done["id"], "requested_by": "agent-7"}, index
        assert stored["valid_to"] is None
        # The same drawer, reached by its path.
        ref = sent.get("name") or stored["id"]
        by_path = client.get(f"/api/wings/{wing}/rooms/{room}/drawers/{ref}")
        assert by_path.status_code == 200, (index, by_path.text)
        assert by_path.json()["id"] == stored["id"]
    assert drawer(client, derived(done["id"], 5))["source"] == {"kind": "manual", "agent": "claude"}


def test_items_without_a_wing_land_in_the_destination_wings(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        items = [
            item("Prefer dark mode.", "preference"),
            item("The project targets Python 3.12.", "project"),
            item("Dear diary, the build is green.", "diary"),
            item("Tea is better than coffee.", "general"),
            item("Spaces, never tabs.", "preference"),
        ]
        done = checkpoint(client, items)
        assert done["result"] == {"items": 5, "duplicates": 0}
        wings = client.get("/api/wings").json()["wings"]
        assert {wing["name"]: wing["counts"] for wing in wings} == {
            "preferences": {"rooms": 1, "drawers": 2},
            "projects": {"rooms": 1, "drawers": 1},
            "diary": {"rooms": 1, "drawers": 1},
            "general": {"rooms": 1, "drawers": 1},
        }
        for wing, room, indexes in (
            ("preferences", "entries", [0, 4]),
            ("projects", "entries", [1]),
            ("diary", "diary", [2]),
            ("general", "entries", [3]),
        ):
            listed = room_drawers(client, wing, room)
            assert sorted(row["id"] for row in listed) == sorted(
                derived(done["id"], index) for index in indexes
            ), (wing, room)
            for index in indexes:
                stored = drawer(client, derived(done["id"], index))
                assert stored["provenance"] == {"job_id": done["id"], "requested_by": "http"}


# Deduplication within a checkpoint.


def test_identical_unnamed_items_are_stored_once(client: httpx.Client, wing_name: str) -> None:
    # Copies in the same stretch of the batch and far apart (30 items later).
    filler = [item(f"Filler {n}: {uuid.uuid4().hex}", wing=wing_name) for n in range(27)]
    items = [
        item(SENTENCE, wing=wing_name),
        item("Something else entirely, filed in between.", wing=wing_name),
        item(SENTENCE, wing=wing_name),
        *filler,
        item(SENTENCE, wing=wing_name),
    ]
    done = checkpoint(client, items)
    assert done["result"] == {"items": 31, "duplicates": 2}
    assert done["checkpoint"] == {"next_index": 31, "duplicates": 2, "failed": []}
    first = drawer(client, derived(done["id"], 0))
    assert first["content"] == SENTENCE
    for index in (2, 30):
        assert_absent(client, derived(done["id"], index))
    assert room_count(client, wing_name, "entries") == 29
    assert similar(client, first["id"]) == {}

    # The same batch again: every item is an exact copy of a drawer valid in its room.
    again = checkpoint(client, items)
    assert again["result"] == {"items": 31, "duplicates": 31}
    for index in range(31):
        assert_absent(client, derived(again["id"], index))
    assert room_count(client, wing_name, "entries") == 29


def test_a_diary_item_is_a_copy_only_of_its_own_agents_entries(
    client: httpx.Client, wing_name: str
) -> None:
    entry = "Reviewed the open pull requests."
    first = checkpoint(client, [item(entry, "diary", wing=wing_name, source={"agent": "alice"})])
    assert first["result"] == {"items": 1, "duplicates": 0}
    done = checkpoint(
        client,
        [
            item(entry, "diary", wing=wing_name, source={"agent": "bob"}),
            item(entry, "diary", wing=wing_name, source={"agent": "alice"}),
        ],
    )
    assert done["result"] == {"items": 2, "duplicates": 1}
    assert drawer(client, derived(done["id"], 0))["source"] == {"kind": "manual", "agent": "bob"}
    assert_absent(client, derived(done["id"], 1))
    assert room_count(client, wing_name, "diary") == 2


def test_an_item_identical_to_a_drawer_valid_in_its_room_is_not_stored(
    client: httpx.Client, wing_name: str
) -> None:
    existing = file(client, wing_name, "entries", SENTENCE)
    elsewhere = f"{wing_name}-elsewhere"
    done = checkpoint(
        client,
        [
            item(SENTENCE, wing=wing_name),
            # Deduplication is per room: the same text in another wing is stored.
            item(SENTENCE, wing=elsewhere),
            item(SENTENCE, "diary", wing=wing_name),
        ],
    )
    assert done["result"] == {"items": 3, "duplicates": 1}
    assert_absent(client, derived(done["id"], 0))
    assert drawer(client, derived(done["id"], 1))["content"] == SENTENCE
    assert drawer(client, derived(done["id"], 2))["content"] == SENTENCE
    assert room_count(client, wing_name, "entries") == 1
    assert similar(client, existing["id"]) == {}

    # Once the drawer is no longer valid, its text is stored again.
    closed = client.post(f"/api/drawers/{existing['id']}/supersede", json={})
    assert closed.status_code == 200, closed.text
    after = checkpoint(client, [item(SENTENCE, wing=wing_name)])
    assert after["result"] == {"items": 1, "duplicates": 0}
    assert drawer(client, derived(after["id"], 0))["content"] == SENTENCE
    assert room_count(client, wing_name, "entries") == 2


def test_named_and_fact_bearing_copies_are_stored_and_linked_exact(
    client: httpx.Client, wing_name: str
) -> None:
    existing = file(client, wing_name, "entries", SENTENCE)
    fact = {"op": "add", "subject": "backend", "predicate": "deployed_on", "object": "Tuesday"}
    done = checkpoint(
        client,
        [
            item(SENTENCE, wing=wing_name, name="deploy-day"),
            item(SENTENCE, wing=wing_name, fact={**fact, "confidence": 0.9}),
        ],
    )
    assert done["result"] == {"items": 2, "duplicates": 0}
    named = drawer(client, derived(done["id"], 0))
    assert (named["name"], named["content"]) == ("deploy-day", SENTENCE)
    evidence = drawer(client, derived(done["id"], 1))
    assert (evidence["name"], evidence["content"]) == (None, SENTENCE)
    assert room_count(client, wing_name, "entries") == 3

    links = similar(client, named["id"])
    assert set(links) == {existing["id"], evidence["id"]}
    assert links[existing["id"]]["side"] == "older"
    assert links[evidence["id"]]["side"] == "newer"
    for link in links.values():
        assert (link["kind"], link["similarity"]) == ("exact", 1.0)
        assert link["signals"]["same_hash"] is True

    links = similar(client, evidence["id"])
    assert {other: link["side"] for other, link in links.items()} == {
        existing["id"]: "older",
        named["id"]: "older",
    }
    assert {link["kind"] for link in links.values()} == {"exact"}
    assert {link["side"] for link in similar(client, existing["id"]).values()} == {"newer"}


def test_typo_and_case_variants_are_stored_and_linked(client: httpx.Client, wing_name: str) -> None:
    existing = file(client, wing_name, "entries", SENTENCE)
    done = checkpoint(client, [item(TYPO, wing=wing_name), item(SHOUTED, wing=wing_name)])
    assert done["result"] == {"items": 2, "duplicates": 0}
    typo = drawer(client, derived(done["id"], 0))
    shouted = drawer(client, derived(done["id"], 1))
    assert (typo["content"], shouted["content"]) == (TYPO, SHOUTED)
    assert room_count(client, wing_name, "entries") == 3

    near = similar(client, typo["id"])
    assert existing["id"] in near, near
    link = near[existing["id"]]
    assert (link["side"], link["kind"]) == ("older", "near")
    assert 0.9 <= link["similarity"] < 1
    assert link["signals"]["same_hash"] is False
    assert link["signals"]["same_fingerprint"] is False

    normalized = similar(client, shouted["id"])
    assert existing["id"] in normalized, normalized
    link = normalized[existing["id"]]
    assert (link["side"], link["kind"], link["similarity"]) == ("older", "normalized", 1.0)
    assert link["signals"]["same_hash"] is False
    assert link["signals"]["same_fingerprint"] is True
    # The case variant is a near copy of the typo too.
    assert normalized[typo["id"]]["kind"] == "near"


def test_a_name_taken_by_other_content_fails_only_that_item(
    client: httpx.Client, wing_name: str
) -> None:
    holder = file(client, wing_name, "entries", "The original text.", name="taken")
    done = checkpoint(
        client,
        [
            item("Stored before the clash.", wing=wing_name),
            item("Different text under a taken name.", wing=wing_name, name="taken"),
            item("Stored after the clash.", wing=wing_name),
            item("Same name twice in one batch.", wing=wing_name, name="twice"),
            item("Other text under the batch's own name.", wing=wing_name, name="twice"),
        ],
    )
    failed = done["result"].pop("failed")
    assert done["result"] == {"items": 5, "duplicates": 0}
    assert [entry["index"] for entry in failed] == [1, 4]
    assert "'taken'" in failed[0]["error"]
    assert "'twice'" in failed[1]["error"]
    assert done["checkpoint"]["failed"] == failed
    assert (done["error"], done["error_code"]) == (None, None)
    for index in (0, 2, 3):
        assert (
            drawer(client, derived(done["id"], index))["content"]
            == done["kind"]["payload"]["items"][index]["content"]
        )
    for index in (1, 4):
        assert_absent(client, derived(done["id"], index))
    assert drawer(client, holder["id"])["content"] == "The original text."
    assert room_count(client, wing_name, "entries") == 4


# Interrupted batches.


def distinct_items(count: int, wing: str) -> list[dict[str, Any]]:
    """Short items no two of which are alike, so none is a duplicate of another."""
    return [item(uuid.uuid4().hex, wing=wing) for _ in range(count)]


def assert_stored_once(client: httpx.Client, job: Job, wing: str) -> None:
    """Each item in exactly one drawer, under its derived id; nothing else in the room."""
    items = job["kind"]["payload"]["items"]
    listed = room_drawers(client, wing, "entries")
    assert len(listed) == len(items) == room_count(client, wing, "entries")
    assert {row["id"] for row in listed} == {derived(job["id"], i) for i in range(len(items))}
    assert sorted(row["preview"] for row in listed) == sorted(entry["content"] for entry in items)
    for index in (0, len(items) // 2, len(items) - 1):
        stored = drawer(client, derived(job["id"], index))
        assert stored["content"] == items[index]["content"]
        assert stored["provenance"]["job_id"] == job["id"]


def test_pause_and_resume_continue_the_batch_without_storing_twice(
    client: httpx.Client, wing_name: str
) -> None:
    # Twenty units of work: on a quiet machine four ran to the end before the pause arrived.
    count = 2000
    job_id = submit(
        client, {"type": "checkpoint", "payload": {"items": distinct_items(count, wing_name)}}
    )["id"]
    watch(
        client,
        job_id,
        lambda job: job["progress"]["current"] >= 1,
        "the checkpoint to store its first items",
        timeout=WAIT,
    )
    requested = client.post(f"/api/jobs/{job_id}/pause")
    assert requested.status_code == 200, f"the batch ended before the pause: {requested.text}"
    paused = wait_job(client, job_id, "paused", timeout=WAIT)
    stopped_at = paused["checkpoint"]["next_index"]
    assert 1 <= stopped_at < count
    assert paused["progress"]["current"] == stopped_at
    assert room_count(client, wing_name, "entries") == stopped_at

    resumed = client.post(f"/api/jobs/{job_id}/resume")
    assert resumed.status_code == 200, resumed.text
    done = wait_job(client, job_id, timeout=WAIT)
    assert done["result"] == {"items": count, "duplicates": 0}
    assert done["checkpoint"]["next_index"] == count
    assert (done["attempt"], done["recovery_attempts"]) == (2, 0)
    assert_stored_once(client, done, wing_name)


# The batch the kill -9 test interrupts, and how far into it: a third of the way, so that items
# are stored both before and after the kill.
KILL_COUNT = 3000
KILL_AT = 1000
KILL_WAIT = 180.0


@pytest.mark.slow
def test_kill_9_in_the_middle_of_a_batch_never_stores_an_item_twice(
    fresh_daemon: Daemon,
) -> None:
    count, wing = KILL_COUNT, "batch"
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        job_id = submit(
            client, {"type": "checkpoint", "payload": {"items": distinct_items(count, wing)}}
        )["id"]
        seen = watch(
            client,
            job_id,
            lambda job: job["progress"]["current"] >= KILL_AT,
            f"the checkpoint to store {KILL_AT} items",
            timeout=KILL_WAIT,
            interval=0.1,
        )
    fresh_daemon.kill()
    assert seen["status"] == "running"
    assert seen["progress"]["current"] < count, "the batch ended before the kill"

    log_before = len(fresh_daemon.log())
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        after = get_job(client, job_id)
        assert after["recovery_attempts"] == 1, after
        assert after["status"] in ("queued", "running", "completed"), after
        # It resumes from its saved checkpoint, not from the start.
        assert after["checkpoint"]["next_index"] >= seen["progress"]["current"]
        done = wait_job(client, job_id, timeout=KILL_WAIT, interval=0.5)
        assert done["result"] == {"items": count, "duplicates": 0}
        assert done["progress"] == {
            "current": count,
            "total": count,
            "message": f"item {count} of {count}",
        }
        assert (done["attempt"], done["recovery_attempts"]) == (2, 1)
        assert f"job recovered job_id={job_id} status=queued" in fresh_daemon.log()[log_before:]
        assert_stored_once(client, done, wing)
        wings = client.get("/api/wings").json()["wings"]
        assert [(w["name"], w["counts"]) for w in wings] == [(wing, {"rooms": 1, "drawers": count})]


# Audit and repair.


def delete_room_behind_the_daemon(daemon: Daemon, room_id: str) -> None:
    """Stop the daemon, delete one room record (not its drawers) in the store, start again."""
    assert daemon.stop() == 0
    store = Store(f"surrealkv://{daemon.palace}/db")
    store.open()
    try:
        store.query("DELETE type::record('room', $id)", {"id": room_id})
        assert store.one("SELECT * FROM type::record('room', $id)", {"id": room_id}) == []
    finally:
        store.close()
    daemon.start()


def audit(client: httpx.Client, **params: Any) -> dict[str, Any]:
    done = run_job(client, {"type": "audit", **params})
    assert done["priority"] == 50
    return done


def test_audit_finds_orphan_drawers_and_repair_removes_them(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        doomed = [file(client, "castle", "doomed", f"Orphan to be, number {n}.") for n in range(3)]
        kept = [file(client, "castle", "kept", f"Survivor number {n}.") for n in range(2)]
        later = [file(client, "moat", "later", f"Orphaned second, number {n}.") for n in range(2)]
        doomed_ids = {row["id"] for row in doomed}
        later_ids = {row["id"] for row in later}
    delete_room_behind_the_daemon(fresh_daemon, doomed[0]["room"])

    with fresh_daemon.client() as client:
        first = audit(client)
        found = first["result"]
        assert found["orphan_drawers"]["count"] == 3
        assert set(found["orphan_drawers"]["ids"]) == doomed_ids
        assert found["dangling_job_refs"] == {"count": 0, "ids": []}
        assert found["exhausted_jobs"] == {"count": 0, "ids": []}
        assert found["running_jobs"] == 0
        assert found["drawers_without_embedding"] == 7
        # A scope narrows only the embedding count; orphans are always palace-wide.
        scoped = audit(client, scope="moat")["result"]
        assert scoped["drawers_without_embedding"] == 2
        assert scoped["orphan_drawers"]["count"] == 3
        assert scoped.get("scope") == "moat"

        # A dry run, the default, only plans.
        planned = run_job(client, {"type": "repair"})
        assert planned["priority"] == 50
        assert planned["kind"] == {"type": "repair", "dry_run": True}
        result = planned["result"]
        assert (result["dry_run"], result["deleted"]) == (True, 0)
        assert result["planned"]["count"] == 3
        assert set(result["planned"]["ids"]) == doomed_ids
        assert result.get("based_on_job") is None
        narrowed = run_job(client, {"type": "repair", "dry_run": True, "based_on_job": first["id"]})
        assert narrowed["result"]["based_on_job"] == first["id"]
        assert (narrowed["result"]["planned"]["count"], narrowed["result"]["deleted"]) == (3, 0)
        for drawer_id in doomed_ids:
            assert drawer(client, drawer_id)["id"] == drawer_id

    # Another room disappears after the audit: a repair based on it leaves the new orphans.
    delete_room_behind_the_daemon(fresh_daemon, later[0]["room"])
    with fresh_daemon.client() as client:
        live = run_job(client, {"type": "repair"})["result"]["planned"]
        assert (live["count"], set(live["ids"])) == (5, doomed_ids | later_ids)

        applied = run_job(client, {"type": "repair", "dry_run": False, "based_on_job": first["id"]})
        assert applied["kind"] == {
            "type": "repair",
            "dry_run": False,
            "based_on_job": first["id"],
        }
        result = applied["result"]
        assert result["dry_run"] is False
        assert result["deleted"] == 3 == found["orphan_drawers"]["count"]
        assert set(result["planned"]["ids"]) == doomed_ids
        assert result["based_on_job"] == first["id"]
        for drawer_id in doomed_ids:
            assert_absent(client, drawer_id)
        for row in [*later, *kept]:
            assert drawer(client, row["id"])["content"] == row["content"]
        assert room_count(client, "castle", "kept") == 2

        second = audit(client)["result"]
        assert second["orphan_drawers"]["count"] == 2
        assert set(second["orphan_drawers"]["ids"]) == later_ids
        assert second["drawers_without_embedding"] == 4

        # Without based_on_job, an applied repair removes every live orphan.
        everything = run_job(client, {"type": "repair", "dry_run": False})["result"]
        assert (everything["deleted"], set(everything["planned"]["ids"])) == (2, later_ids)
        for drawer_id in later_ids:
            assert_absent(client, drawer_id)

        clean = audit(client)["result"]
        assert clean["orphan_drawers"] == {"count": 0, "ids": []}
        assert clean["drawers_without_embedding"] == 2
        nothing = run_job(client, {"type": "repair", "dry_run": False})["result"]
        assert (nothing["planned"], nothing["deleted"]) == ({"count": 0, "ids": []}, 0)
        for row in kept:
            assert drawer(client, row["id"])["content"] == row["content"]


@pytest.mark.slow
def test_a_repair_based_on_an_audit_removes_every_orphan_it_found(fresh_daemon: Daemon) -> None:
    count = 1005
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        filed = checkpoint(client, distinct_items(count, "crowded"))
        assert filed["result"] == {"items": count, "duplicates": 0}
        room_id = client.get("/api/wings/crowded/rooms/entries").json()["id"]
    delete_room_behind_the_daemon(fresh_daemon, room_id)
    with fresh_daemon.client() as client:
        found = audit(client)
        # The report lists at most 1000 ids; its count is whole.
        assert found["result"]["orphan_drawers"]["count"] == count
        assert len(found["result"]["orphan_drawers"]["ids"]) == 1000
        applied = run_job(client, {"type": "repair", "dry_run": False, "based_on_job": found["id"]})
        left = audit(client)["result"]["orphan_drawers"]
        assert (applied["result"]["deleted"], left["count"]) == (count, 0)


def refused_based_on(client: httpx.Client, value: object, *, dry_run: bool = False) -> str:
    before = total(client, "repair")
    response = client.post(
        "/api/jobs", json={"type": "repair", "dry_run": dry_run, "based_on_job": value}
    )
    answer = assert_error(response, 400, BASED_ON_INVALID)
    assert answer["error"].startswith("`based_on_job`"), answer
    assert total(client, "repair") == before, "a refused repair was queued"
    return answer["error"]


def test_based_on_job_must_name_a_completed_audit(fresh_daemon: Daemon) -> None:
    fresh_daemon.env["MEMCASTLE_JOBS_MAX_CONCURRENCY"] = "1"
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        not_an_audit = checkpoint(client, [item("A completed job, but no audit.")])["id"]
        assert str(not_an_audit) in refused_based_on(client, not_an_audit)

        holder = submit(client, {"type": "demo", "steps": 2, "step_ms": FOREVER_MS})["id"]
        watch(
            client,
            holder,
            lambda job: job["status"] == "running",
            "the demo job to hold the only worker",
            timeout=WAIT,
        )
        waiting = submit(client, {"type": "audit"})["id"]
        assert get_job(client, waiting)["status"] == "queued"
        refused_based_on(client, waiting)
        refused_based_on(client, waiting, dry_run=True)
        cancelled = client.post(f"/api/jobs/{waiting}/cancel")
        assert cancelled.json()["status"] == "cancelled", cancelled.text
        refused_based_on(client, waiting)

        for value in (str(uuid.uuid4()), "not-a-uuid", "", 5, ["x"], {"id": waiting}):
            refused_based_on(client, value)
        assert client.post(f"/api/jobs/{holder}/force-cancel").status_code == 200

        done = audit(client)["id"]
        # Any letter case names the same job.
        accepted = run_job(
            client, {"type": "repair", "dry_run": False, "based_on_job": done.upper()}
        )
        assert accepted["result"]["based_on_job"] == done
        assert accepted["result"]["deleted"] == 0
        assert total(client, "repair") == 1


def test_based_on_job_accepts_any_spelling_of_the_audit_id(client: httpx.Client) -> None:
    done = audit(client)["id"]
    response = client.post(
        "/api/jobs", json={"type": "repair", "based_on_job": uuid.UUID(done).hex}
    )
    assert response.status_code == 201, response.text
    wait_job(client, response.json()["id"], timeout=WAIT)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "repair", "dry_run": "false"}, "dry_run"),
        ({"type": "repair", "dry_run": 0}, "dry_run"),
        ({"type": "repair", "wing": "w"}, "wing"),
        ({"type": "audit", "scope": ""}, "scope"),
        ({"type": "audit", "scope": 5}, "scope"),
        ({"type": "audit", "dry_run": True}, "dry_run"),
    ],
)
def test_audit_and_repair_parameters_are_validated(
    client: httpx.Client, body: dict[str, Any], field: str
) -> None:
    before = total(client, body["type"])
    answer = assert_error(client.post("/api/jobs", json=body), 400, INVALID)
    assert answer["error"].startswith(f"`{field}`"), answer
    assert total(client, body["type"]) == before


def test_only_an_applied_repair_is_mode_gated(client: httpx.Client) -> None:
    before = total(client, "repair")
    for headers in (READ_ONLY, DISABLED):
        refused = client.post(
            "/api/jobs", json={"type": "repair", "dry_run": False}, headers=headers
        )
        assert "`repair`" in assert_error(refused, 403, FORBIDDEN)["error"]
    assert total(client, "repair") == before

    for headers in (READ_ONLY, DISABLED):
        for body in ({"type": "repair"}, {"type": "repair", "dry_run": True}):
            planned = run_job(client, body, **headers)
            assert planned["result"]["dry_run"] is True
            assert planned["result"]["deleted"] == 0
        found = run_job(client, {"type": "audit"}, **headers)
        assert set(found["result"]) >= {
            "orphan_drawers",
            "dangling_job_refs",
            "exhausted_jobs",
            "running_jobs",
            "drawers_without_embedding",
        }
