"""The journal over real HTTP against a real daemon: notes, an agent's diary, the wake-up an agent
reads when it starts (with highlights filed by real checkpoint jobs), memory modes and the drawer
events these writes publish.

Tests share one daemon and each works in its own wing, with agent identities of its own. Every
wait polls a condition with a deadline.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support.events import EventStream, Frame
from tests.support.http import Drawer, Job, assert_error, submit, wait_job, without_created
from tests.support.instants import instant

INVALID = "memcastle::input::invalid"
PATH_INVALID = "memcastle::palace::path_invalid"
FORBIDDEN = "memcastle::mode::forbidden"
WING_NOT_FOUND = "memcastle::palace::wing_not_found"
READ_ONLY = {"X-MemCastle-Mode": "read_only"}
DISABLED = {"X-MemCastle-Mode": "disabled"}
WAIT = 15.0


@pytest.fixture
def agent() -> str:
    """An agent identity no other test uses; identities are free strings, kept verbatim."""
    return f" Agent {uuid.uuid4().hex[:8]} / v2 "


def note(client: httpx.Client, *, status: int = 201, **body: Any) -> Drawer:
    response = client.post("/api/notes", json=body)
    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["created"] is (status == 201)
    return answer


def write_diary(
    client: httpx.Client, agent: str, wing: str, content: str, *, status: int = 201, **body: Any
) -> Drawer:
    response = client.post(
        "/api/diary", json={"agent_identity": agent, "wing": wing, "content": content, **body}
    )
    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["created"] is (status == 201)
    return answer


def read_diary(client: httpx.Client, agent: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/diary", params={"agent_identity": agent, **params})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"agent_identity", "wing", "entries", "limit"}
    assert answer["agent_identity"] == agent
    return answer


def wake_up(client: httpx.Client, agent: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/wake-up", params={"agent_identity": agent, **params})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"diary", "recent_highlights", "generated_at"}
    instant(answer["generated_at"])
    return answer


def room(client: httpx.Client, wing: str, name: str) -> dict[str, Any]:
    response = client.get(f"/api/wings/{wing}/rooms/{name}")
    assert response.status_code == 200, response.text
    return response.json()


def checkpoint(client: httpx.Client, items: list[dict[str, Any]]) -> Job:
    """Submit a checkpoint job and wait for it to complete."""
    job = submit(client, {"type": "checkpoint", "payload": {"items": items}})
    return wait_job(client, job["id"], timeout=WAIT)


def checkpointed(client: httpx.Client, wing: str, job: dict[str, Any]) -> list[Drawer]:
    """The drawers a checkpoint job filed in `<wing>/entries`, in item order."""
    response = client.get(f"/api/wings/{wing}/rooms/entries/drawers")
    assert response.status_code == 200, response.text
    ids = [entry["id"] for entry in response.json()["drawers"]]
    drawers = [client.get(f"/api/drawers/{drawer_id}").json() for drawer_id in ids]
    return [drawer for drawer in drawers if drawer["provenance"]["job_id"] == job["id"]]


# Notes.


def test_a_note_is_filed_in_the_notes_room(client: httpx.Client, wing_name: str) -> None:
    content = "Remember: the staging DB password rotates monthly.  \n"
    filed = note(client, wing=wing_name, content=content, uri="/home/alice/project")
    assert filed["content"] == content, "a note's content is kept verbatim"
    assert filed["source"] == {"kind": "note", "uri": "/home/alice/project"}
    assert filed["name"] is None
    assert filed["tags"] == []
    assert filed["valid_to"] is None
    assert filed["provenance"] == {"requested_by": "http", "job_id": None}
    notes_room = room(client, wing_name, "notes")
    assert filed["room"] == notes_room["id"]
    assert notes_room["counts"] == {"drawers": 1}
    stored = client.get(f"/api/drawers/{filed['id']}").json()
    assert stored == without_created(filed)

    # An identical note in the room is the same note; the same words elsewhere are another.
    again = note(client, status=200, wing=wing_name, content=content)
    assert without_created(again) == stored
    assert room(client, wing_name, "notes")["counts"] == {"drawers": 1}
    elsewhere = note(client, wing=wing_name, room="ideas", content=content)
    assert elsewhere["id"] != filed["id"]
    assert elsewhere["source"] == {"kind": "note"}


def test_a_note_takes_a_room_tags_and_a_channel(client: httpx.Client, wing_name: str) -> None:
    filed = note(
        client,
        wing=wing_name,
        room="meetings",
        content="Retro moved to Thursday.",
        tags=["team", "calendar"],
        requested_by="cli",
    )
    assert filed["tags"] == ["team", "calendar"]
    assert filed["provenance"] == {"requested_by": "cli", "job_id": None}
    assert filed["room"] == room(client, wing_name, "meetings")["id"]
    rooms = client.get(f"/api/wings/{wing_name}/rooms").json()["rooms"]
    assert [entry["name"] for entry in rooms] == ["meetings"]


def test_a_note_variant_is_stored_and_linked(client: httpx.Client, wing_name: str) -> None:
    older = note(client, wing=wing_name, content="Ship the release notes with every tag.")
    newer = note(client, wing=wing_name, content="ship the release notes with every tag")
    links = client.get(f"/api/drawers/{newer['id']}/duplicates").json()["similar"]
    assert [(link["drawer"]["id"], link["side"], link["kind"]) for link in links] == [
        (older["id"], "older", "normalized")
    ]


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"content": "x"}, 400, INVALID, "wing"),
        ({"wing": "", "content": "x"}, 400, INVALID, "wing"),
        ({"wing": "   ", "content": "x"}, 400, INVALID, "wing"),
        ({"wing": 7, "content": "x"}, 400, INVALID, "wing"),
        ({}, 400, INVALID, None),
        ({"wing": "W"}, 400, INVALID, "content"),
        ({"wing": "W", "content": " \n "}, 400, INVALID, "content"),
        ({"wing": "W", "content": ["x"]}, 400, INVALID, "content"),
        ({"wing": "W", "content": "x", "uri": 5}, 400, INVALID, "uri"),
        ({"wing": "W", "content": "x", "tags": "a"}, 400, INVALID, "tags"),
        ({"wing": "W", "content": "x", "name": "n"}, 400, INVALID, "name"),
        ({"wing": "W", "content": "x", "agent_identity": "a"}, 400, INVALID, "agent_identity"),
        ({"wing": "W", "content": "x", "requested_by": ""}, 400, INVALID, "requested_by"),
        ({"wing": "a/b", "content": "x"}, 400, PATH_INVALID, None),
        (["W", "x"], 400, INVALID, "body"),
    ],
)
def test_note_input_is_validated(
    client: httpx.Client,
    wing_name: str,
    body: object,
    status: int,
    code: str,
    field: str | None,
) -> None:
    if isinstance(body, dict) and body.get("wing") == "W":
        body = {**body, "wing": wing_name}
    refused = assert_error(client.post("/api/notes", json=body), status, code)
    if field is not None:
        assert refused["error"].startswith(f"`{field}`"), refused
    assert_error(client.get(f"/api/wings/{wing_name}"), 404, WING_NOT_FOUND)
    assert "a/b" not in {wing["name"] for wing in client.get("/api/wings").json()["wings"]}


@pytest.mark.parametrize("route", ["note", "drawer", "room"])
def test_a_refused_room_name_creates_no_wing(
    client: httpx.Client, wing_name: str, route: str
) -> None:
    if route == "note":
        response = client.post(
            "/api/notes", json={"wing": wing_name, "room": "a/b", "content": "x"}
        )
    elif route == "drawer":
        response = client.post(f"/api/wings/{wing_name}/rooms/%20r/drawers", json={"content": "x"})
    else:
        response = client.post(f"/api/wings/{wing_name}/rooms", json={"name": "a/b"})
    assert_error(response, 400, PATH_INVALID)
    assert_error(client.get(f"/api/wings/{wing_name}"), 404, WING_NOT_FOUND)


# The diary.


def test_diary_write_and_read(client: httpx.Client, wing_name: str, agent: str) -> None:
    first = write_diary(client, agent, wing_name, "Fixed the flaky login test.\n", tags=["ci"])
    assert first["source"] == {"kind": "manual", "agent": agent}, "the identity is verbatim"
    assert first["content"] == "Fixed the flaky login test.\n"
    assert first["tags"] == ["ci"]
    assert first["name"] is None
    assert first["room"] == room(client, wing_name, "diary")["id"]
    second = write_diary(client, agent, wing_name, "Reviewed the cache PR.", requested_by="mcp")
    assert second["provenance"] == {"requested_by": "mcp", "job_id": None}

    answer = read_diary(client, agent, wing=wing_name)
    assert answer["wing"] == wing_name
    assert answer["limit"] == 20
    assert answer["entries"] == [without_created(second), without_created(first)]


def test_diary_copies_are_per_agent(client: httpx.Client, wing_name: str, agent: str) -> None:
    other = f"{agent}-other"
    mine = write_diary(client, agent, wing_name, "Deployed version 1.4.2 to production.")
    again = write_diary(
        client, agent, wing_name, "Deployed version 1.4.2 to production.", status=200
    )
    assert without_created(again) == without_created(mine)
    theirs = write_diary(client, other, wing_name, "Deployed version 1.4.2 to production.")
    assert theirs["id"] != mine["id"]
    assert theirs["source"]["agent"] == other
    # Another agent's entry is not a copy of mine, so nothing links them.
    assert client.get(f"/api/drawers/{theirs['id']}/duplicates").json()["similar"] == []
    # The same agent's variant is stored and linked to the agent's own entry only.
    variant = write_diary(client, agent, wing_name, "deployed version 1.4.2 to PRODUCTION")
    links = client.get(f"/api/drawers/{variant['id']}/duplicates").json()["similar"]
    assert [(link["drawer"]["id"], link["kind"]) for link in links] == [(mine["id"], "normalized")]
    assert room(client, wing_name, "diary")["counts"] == {"drawers": 3}

    assert [entry["id"] for entry in read_diary(client, agent, wing=wing_name)["entries"]] == [
        variant["id"],
        mine["id"],
    ]
    assert [entry["id"] for entry in read_diary(client, other, wing=wing_name)["entries"]] == [
        theirs["id"]
    ]


def test_diary_reads_newest_first_within_the_limit(
    client: httpx.Client, wing_name: str, agent: str
) -> None:
    written = [write_diary(client, agent, wing_name, f"entry number {n}")["id"] for n in range(22)]
    newest_first = list(reversed(written))

    default = read_diary(client, agent, wing=wing_name)
    assert default["limit"] == 20
    assert [entry["id"] for entry in default["entries"]] == newest_first[:20]
    assert read_diary(client, agent, wing=wing_name, limit=0) == default
    assert read_diary(client, agent, wing=wing_name, limit="") == default
    few = read_diary(client, agent, wing=wing_name, limit=3)
    assert (few["limit"], [entry["id"] for entry in few["entries"]]) == (3, newest_first[:3])
    capped = read_diary(client, agent, wing=wing_name, limit=999)
    assert capped["limit"] == 200
    assert [entry["id"] for entry in capped["entries"]] == newest_first
    created = [instant(entry["created_at"]) for entry in capped["entries"]]
    assert created == sorted(created, reverse=True)


def test_diary_skips_superseded_entries(client: httpx.Client, wing_name: str, agent: str) -> None:
    kept = write_diary(client, agent, wing_name, "Monday: planned the sprint.")
    corrected = write_diary(client, agent, wing_name, "Tuesday: paired on the parser.")
    invalidated = write_diary(client, agent, wing_name, "Wednesday: nothing worth noting.")
    response = client.post(
        f"/api/drawers/{corrected['id']}/supersede", json={"content": "Tuesday: fixed the parser."}
    )
    assert response.status_code == 200, response.text
    response = client.post(f"/api/drawers/{invalidated['id']}/supersede", json={})
    assert response.status_code == 200, response.text

    ids = [entry["id"] for entry in read_diary(client, agent, wing=wing_name)["entries"]]
    assert corrected["id"] not in ids
    assert invalidated["id"] not in ids
    assert kept["id"] in ids
    # An exact copy of a closed entry is a new entry.
    again = write_diary(client, agent, wing_name, "Wednesday: nothing worth noting.")
    assert again["id"] != invalidated["id"]
    assert read_diary(client, agent, wing=wing_name)["entries"][0]["id"] == again["id"]


def test_diary_reads_only_the_agents_own_entries(
    client: httpx.Client, wing_name: str, agent: str
) -> None:
    other_wing = f"{wing_name}-b"
    in_first = write_diary(client, agent, wing_name, "Worked in the first wing.")
    write_diary(client, f"{agent}x", wing_name, "Another agent in the first wing.")
    write_diary(client, agent.strip(), wing_name, "The same name without its spaces.")
    in_second = write_diary(client, agent, other_wing, "Worked in the second wing.")
    # A drawer of the agent outside a diary room is not a diary entry.
    response = client.post(
        f"/api/wings/{wing_name}/rooms/notes/drawers",
        json={"content": "not a diary entry", "source": {"kind": "manual", "agent": agent}},
    )
    assert response.status_code == 201, response.text

    first = read_diary(client, agent, wing=wing_name)
    assert [entry["id"] for entry in first["entries"]] == [in_first["id"]]
    second = read_diary(client, agent, wing=other_wing)
    assert [entry["id"] for entry in second["entries"]] == [in_second["id"]]
    # Without a wing, every wing's diary.
    everywhere = read_diary(client, agent)
    assert everywhere["wing"] is None
    assert [entry["id"] for entry in everywhere["entries"]] == [in_second["id"], in_first["id"]]
    # A wing nobody wrote to reads as empty, and is not created by reading it.
    ghost = f"{wing_name}-ghost"
    empty = read_diary(client, agent, wing=ghost)
    assert (empty["wing"], empty["entries"]) == (ghost, [])
    assert_error(client.get(f"/api/wings/{ghost}"), 404, WING_NOT_FOUND)
    assert read_diary(client, f"nobody-{uuid.uuid4().hex}", wing=wing_name)["entries"] == []


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"wing": "W", "content": "x"}, INVALID, "agent_identity"),
        ({"agent_identity": "", "wing": "W", "content": "x"}, INVALID, "agent_identity"),
        ({"agent_identity": 5, "wing": "W", "content": "x"}, INVALID, "agent_identity"),
        ({"agent_identity": "a", "content": "x"}, INVALID, "wing"),
        ({"agent_identity": "a", "wing": " ", "content": "x"}, INVALID, "wing"),
        ({"agent_identity": "a", "wing": "W"}, INVALID, "content"),
        ({"agent_identity": "a", "wing": "W", "content": "\t"}, INVALID, "content"),
        ({"agent_identity": "a", "wing": "W", "content": "x", "room": "r"}, INVALID, "room"),
        ({"agent_identity": "a", "wing": "W", "content": "x", "tags": [1]}, INVALID, "tags"),
        ({"agent_identity": "a", "wing": "a/b", "content": "x"}, PATH_INVALID, None),
        ("entry", INVALID, "body"),
    ],
)
def test_diary_input_is_validated(
    client: httpx.Client, wing_name: str, body: object, code: str, field: str | None
) -> None:
    if isinstance(body, dict) and body.get("wing") == "W":
        body = {**body, "wing": wing_name}
    refused = assert_error(client.post("/api/diary", json=body), 400, code)
    if field is not None:
        assert refused["error"].startswith(f"`{field}`"), refused
    assert_error(client.get(f"/api/wings/{wing_name}"), 404, WING_NOT_FOUND)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "agent_identity"),
        ({"agent_identity": ""}, "agent_identity"),
        ({"agent_identity": "a", "limit": "-1"}, "limit"),
        ({"agent_identity": "a", "limit": "many"}, "limit"),
        ({"agent_identity": "a", "limit": "2.5"}, "limit"),
    ],
)
def test_diary_read_is_validated(client: httpx.Client, params: dict[str, str], field: str) -> None:
    refused = assert_error(client.get("/api/diary", params=params), 400, INVALID)
    assert refused["error"].startswith(f"`{field}`"), refused


# Wake-up.


def test_wake_up_reads_the_diary_and_the_checkpointed_drawers(
    client: httpx.Client, wing_name: str, agent: str
) -> None:
    write_diary(client, agent, wing_name, "Yesterday: started the migration.")
    diary = write_diary(client, agent, wing_name, "Today: finish the migration.")
    # Another agent's newer entry is not this agent's diary.
    write_diary(client, f"{agent}-other", wing_name, "Someone else's day.")
    # A drawer filed directly is not a highlight, however new.
    client.post(
        f"/api/wings/{wing_name}/rooms/entries/drawers", json={"content": "filed by hand"}
    ).raise_for_status()
    job = checkpoint(
        client,
        [
            {"destination": "project", "wing": wing_name, "content": "We use pnpm.", "tags": []},
            {
                "destination": "project",
                "wing": wing_name,
                "content": "Tests run with pytest -q.",
                "tags": ["testing"],
                "source": {"kind": "manual", "agent": "another-agent"},
            },
        ],
    )
    assert job["result"] == {"items": 2, "duplicates": 0}
    first, second = checkpointed(client, wing_name, job)
    assert (first["content"], second["content"]) == ("We use pnpm.", "Tests run with pytest -q.")
    assert first["provenance"] == {"requested_by": "http", "job_id": job["id"]}

    answer = wake_up(client, agent, wing=wing_name)
    assert answer["diary"] == without_created(diary)
    # Newest first, whoever the item was written for.
    assert answer["recent_highlights"] == [second, first]
    assert instant(answer["generated_at"]) >= instant(second["created_at"])
    # max_items 0 is the default.
    assert wake_up(client, agent, wing=wing_name, max_items=0)["recent_highlights"] == [
        second,
        first,
    ]

    # The diary is read only when a wing is asked for.
    anywhere = wake_up(client, agent, max_items=2)
    assert anywhere["diary"] is None
    assert anywhere["recent_highlights"] == [second, first], "these are the newest highlights"

    # Another agent sees the same highlights but not this agent's diary.
    stranger = wake_up(client, f"stranger-{uuid.uuid4().hex}", wing=wing_name)
    assert stranger["diary"] is None
    assert stranger["recent_highlights"] == [second, first]


def test_wake_up_skips_closed_drawers(client: httpx.Client, wing_name: str, agent: str) -> None:
    older = write_diary(client, agent, wing_name, "An entry that stays.")
    newest = write_diary(client, agent, wing_name, "An entry that will be withdrawn.")
    job = checkpoint(
        client,
        [
            {"destination": "general", "wing": wing_name, "content": f"highlight {n}", "tags": []}
            for n in range(3)
        ],
    )
    h0, h1, h2 = checkpointed(client, wing_name, job)
    assert wake_up(client, agent, wing=wing_name)["diary"]["id"] == newest["id"]

    for closed, body in ((h1, {"content": "highlight 1, corrected"}), (h2, {}), (newest, {})):
        response = client.post(f"/api/drawers/{closed['id']}/supersede", json=body)
        assert response.status_code == 200, response.text

    answer = wake_up(client, agent, wing=wing_name)
    assert answer["diary"]["id"] == older["id"]
    # The correction was filed by hand, not by the checkpoint, so it is no highlight either.
    assert [drawer["id"] for drawer in answer["recent_highlights"]] == [h0["id"]]


def test_a_checkpoint_copy_is_not_a_second_highlight(client: httpx.Client, wing_name: str) -> None:
    by_hand = client.post(
        f"/api/wings/{wing_name}/rooms/entries/drawers", json={"content": "Filed by hand first."}
    )
    assert by_hand.status_code == 201, by_hand.text
    item = {"destination": "project", "wing": wing_name, "tags": []}
    job = checkpoint(
        client,
        [
            {**item, "content": "Filed by hand first."},
            {**item, "content": "Said twice in one batch."},
            {**item, "content": "Said twice in one batch."},
        ],
    )
    assert job["result"] == {"items": 3, "duplicates": 2}
    [filed] = checkpointed(client, wing_name, job)
    assert filed["content"] == "Said twice in one batch."
    assert room(client, wing_name, "entries")["counts"] == {"drawers": 2}
    answer = wake_up(client, "anyone", wing=wing_name)
    assert answer["recent_highlights"] == [filed]


def test_wake_up_keeps_highlights_whole_within_the_budget(
    client: httpx.Client, wing_name: str, agent: str
) -> None:
    diary = write_diary(client, agent, wing_name, "d" * 30)
    # In item order, so the newest is last: 10, 10, 100 and 40 bytes (20 two-byte characters).
    contents = ["a" * 9 + "1", "b" * 9 + "2", "c" * 100, "é" * 20]
    assert [len(text.encode()) for text in contents] == [10, 10, 100, 40]
    job = checkpoint(
        client,
        [
            {"destination": "project", "wing": wing_name, "content": text, "tags": []}
            for text in contents
        ],
    )
    oldest, old, big, newest = (drawer["id"] for drawer in checkpointed(client, wing_name, job))

    def highlights(**params: Any) -> list[str]:
        answer = wake_up(client, agent, wing=wing_name, **params)
        assert answer["diary"]["id"] == diary["id"], "the diary entry is never dropped"
        assert answer["diary"]["content"] == "d" * 30, "nor trimmed"
        for drawer in answer["recent_highlights"]:
            assert drawer["content"] in contents, "highlights are never trimmed"
        return [drawer["id"] for drawer in answer["recent_highlights"]]

    everything = [newest, big, old, oldest]
    assert highlights() == everything
    assert highlights(max_bytes=0) == everything
    assert highlights(max_bytes=190) == everything
    assert highlights(max_items=2) == [newest, big]
    assert highlights(max_items=3, max_bytes=8192) == [newest, big, old]
    # The diary's 30 bytes count first: 30 + 40 fits in 70 bytes exactly ...
    assert highlights(max_bytes=70) == [newest]
    # ... but not in 69; bytes are counted, not characters.
    assert highlights(max_bytes=69) == []
    # Dropping stops at the first highlight that does not fit, even if an older one would.
    assert highlights(max_bytes=150) == [newest]
    assert highlights(max_bytes=179) == [newest, big]
    assert highlights(max_bytes=189) == [newest, big, old]
    # A diary entry larger than the budget is still given whole, with no highlights.
    assert highlights(max_bytes=10) == []

    # Without a wing there is no diary, and the whole budget goes to highlights.
    anywhere = wake_up(client, agent, max_bytes=40)
    assert anywhere["diary"] is None
    assert [drawer["id"] for drawer in anywhere["recent_highlights"]] == [newest]


def test_wake_up_of_an_empty_or_unknown_wing(client: httpx.Client, wing_name: str) -> None:
    client.post("/api/wings", json={"name": wing_name}).raise_for_status()
    for wing in (wing_name, f"{wing_name}-ghost"):
        answer = wake_up(client, "anyone", wing=wing)
        assert (answer["diary"], answer["recent_highlights"]) == (None, [])
    assert_error(client.get(f"/api/wings/{wing_name}-ghost"), 404, WING_NOT_FOUND)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "agent_identity"),
        ({"agent_identity": ""}, "agent_identity"),
        ({"wing": "w"}, "agent_identity"),
        ({"agent_identity": "a", "max_items": "-1"}, "max_items"),
        ({"agent_identity": "a", "max_items": "ten"}, "max_items"),
        ({"agent_identity": "a", "max_bytes": "-5"}, "max_bytes"),
        ({"agent_identity": "a", "max_bytes": "8k"}, "max_bytes"),
    ],
)
def test_wake_up_is_validated(client: httpx.Client, params: dict[str, str], field: str) -> None:
    refused = assert_error(client.get("/api/wake-up", params=params), 400, INVALID)
    assert refused["error"].startswith(f"`{field}`"), refused


# Memory modes.


def test_read_only_and_disabled_refuse_journal_writes(
    client: httpx.Client, wing_name: str, agent: str
) -> None:
    existing = write_diary(client, agent, wing_name, "written in full mode")
    note(client, wing=wing_name, content="a note written in full mode")
    before = client.get(f"/api/wings/{wing_name}").json()
    new_wing = f"{wing_name}-new"
    for mode in ("read_only", "disabled"):
        headers = {"X-MemCastle-Mode": mode}
        for wing in (wing_name, new_wing):
            refused = assert_error(
                client.post(
                    "/api/notes", json={"wing": wing, "content": "refused"}, headers=headers
                ),
                403,
                FORBIDDEN,
            )
            assert refused["error"] == f"`note` is not permitted in {mode} mode"
            refused = assert_error(
                client.post(
                    "/api/diary",
                    json={"agent_identity": agent, "wing": wing, "content": "refused"},
                    headers=headers,
                ),
                403,
                FORBIDDEN,
            )
            assert refused["error"] == f"`diary_write` is not permitted in {mode} mode"
        # Even what would have been a no-op copy, and even an invalid body.
        assert_error(
            client.post(
                "/api/diary",
                json={"agent_identity": agent, "wing": wing_name, "content": existing["content"]},
                headers=headers,
            ),
            403,
            FORBIDDEN,
        )
        assert_error(client.post("/api/notes", json={}, headers=headers), 403, FORBIDDEN)
    assert client.get(f"/api/wings/{wing_name}").json() == before
    assert_error(client.get(f"/api/wings/{new_wing}"), 404, WING_NOT_FOUND)
    assert [entry["id"] for entry in read_diary(client, agent, wing=wing_name)["entries"]] == [
        existing["id"]
    ]


def test_diary_and_wake_up_are_reads(client: httpx.Client, wing_name: str, agent: str) -> None:
    write_diary(client, agent, wing_name, "readable while read-only")
    for route, operation in (("/api/diary", "diary_read"), ("/api/wake-up", "wake_up")):
        params = {"agent_identity": agent, "wing": wing_name}
        full = client.get(route, params=params).json()
        read_only = client.get(route, params=params, headers=READ_ONLY)
        assert read_only.status_code == 200, read_only.text
        if operation == "wake_up":
            full.pop("generated_at")
            assert {k: v for k, v in read_only.json().items() if k != "generated_at"} == full
        else:
            assert read_only.json() == full
        refused = assert_error(client.get(route, params=params, headers=DISABLED), 403, FORBIDDEN)
        assert refused["error"] == f"`{operation}` is not permitted in disabled mode"


# Events.


def test_journal_writes_publish_drawer_events(
    client: httpx.Client, stream: EventStream, wing_name: str, agent: str
) -> None:
    filed = note(client, wing=wing_name, content="An evented note.")
    note(client, status=200, wing=wing_name, content="An evented note.")
    entry = write_diary(client, agent, wing_name, "An evented entry.")
    write_diary(client, agent, wing_name, "An evented entry.", status=200)
    assert_error(
        client.post(
            "/api/notes", json={"wing": wing_name, "content": "refused"}, headers=READ_ONLY
        ),
        403,
        FORBIDDEN,
    )
    sentinel = note(client, wing=wing_name, content="The last write of this test.")
    stream.wait(
        lambda item: isinstance(item, Frame) and item.data.get("id") == sentinel["id"],
        what="the sentinel's drawer frame",
    )

    wing_id = filed["wing"]
    mine = [
        (frame.event, frame.data)
        for frame in stream.frames()
        if wing_id in (frame.data.get("id"), frame.data.get("wing"))
    ]
    notes_room, diary_room = filed["room"], entry["room"]
    assert mine == [
        ("wing", {"kind": "wing", "action": "created", "id": wing_id}),
        ("room", {"kind": "room", "action": "created", "id": notes_room, "wing": wing_id}),
        (
            "drawer",
            {
                "kind": "drawer",
                "action": "created",
                "id": filed["id"],
                "wing": wing_id,
                "room": notes_room,
            },
        ),
        ("room", {"kind": "room", "action": "created", "id": diary_room, "wing": wing_id}),
        (
            "drawer",
            {
                "kind": "drawer",
                "action": "created",
                "id": entry["id"],
                "wing": wing_id,
                "room": diary_room,
            },
        ),
        (
            "drawer",
            {
                "kind": "drawer",
                "action": "created",
                "id": sentinel["id"],
                "wing": wing_id,
                "room": notes_room,
            },
        ),
    ]
