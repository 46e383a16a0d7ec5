"""Correcting memory over real HTTP against a real daemon: superseding and invalidating a drawer,
its history, the likely copies deduplication links, memory modes, the drawer events, and wing and
room deletes held off while a job that writes to the palace is pending.

Tests on the shared daemon each work in their own wing; tests that need another configuration
start a daemon of their own. Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.events import EventStream, Frame
from tests.support.http import (
    Drawer,
    Job,
    assert_error,
    drawer,
    get_job,
    room_count,
    submit,
    watch,
    without_created,
)
from tests.support.instants import instant

INVALID = "memcastle::input::invalid"
FORBIDDEN = "memcastle::mode::forbidden"
NOT_FOUND = "memcastle::palace::drawer_not_found"
SUPERSEDED = "memcastle::palace::drawer_superseded"
BUSY = "memcastle::palace::busy"
READ_ONLY = {"X-MemCastle-Mode": "read_only"}
DISABLED = {"X-MemCastle-Mode": "disabled"}
WAIT = 15.0


def file(
    client: httpx.Client, wing: str, room: str, content: str, *, status: int = 201, **body: Any
) -> Drawer:
    response = client.post(
        f"/api/wings/{wing}/rooms/{room}/drawers", json={"content": content, **body}
    )
    assert response.status_code == status, response.text
    drawer = response.json()
    assert drawer["created"] is (status == 201)
    return drawer


def supersede(client: httpx.Client, drawer_id: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/drawers/{drawer_id}/supersede", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"superseded", "replacement"}
    return answer


def history(client: httpx.Client, drawer_id: str) -> dict[str, Any]:
    response = client.get(f"/api/drawers/{drawer_id}/history")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"drawer", "versions"}
    return answer


def similar(client: httpx.Client, drawer_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/drawers/{drawer_id}/duplicates")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"drawer", "similar"}
    assert answer["drawer"]["id"] == drawer_id
    for link in answer["similar"]:
        assert set(link) == {"drawer", "side", "kind", "similarity", "signals", "created_at"}
        assert link["drawer"]["id"] != drawer_id, "a drawer is never linked to itself"
    return answer["similar"]


# Superseding.


def test_supersede_files_a_replacement_from_the_same_instant(
    client: httpx.Client, wing_name: str
) -> None:
    old = file(client, wing_name, "ops", "We deploy on Fridays.", name="deploy", tags=["ops"])
    answer = supersede(client, old["id"], content="We deploy on Mondays.")
    closed, replacement = answer["superseded"], answer["replacement"]

    # The old drawer is closed, loses its name to the replacement and keeps its content.
    assert closed["id"] == old["id"]
    assert closed["content"] == "We deploy on Fridays."
    assert closed["content_hash"] == old["content_hash"]
    assert closed["valid_from"] == old["valid_from"]
    assert closed["valid_to"] is not None
    assert closed["name"] is None
    assert closed["superseded_by"] == replacement["id"]
    assert "supersedes" not in closed
    assert closed["created_at"] == old["created_at"]

    # The replacement starts where the old one ended, in the same room, under its name and tags.
    assert uuid.UUID(replacement["id"]) and replacement["id"] != old["id"]
    assert replacement["content"] == "We deploy on Mondays."
    assert replacement["valid_from"] == closed["valid_to"]
    assert instant(replacement["valid_from"]) > instant(old["valid_from"])
    assert replacement["valid_to"] is None
    assert (replacement["wing"], replacement["room"]) == (old["wing"], old["room"])
    assert replacement["name"] == "deploy"
    assert replacement["tags"] == ["ops"]
    assert replacement["supersedes"] == old["id"]
    assert "superseded_by" not in replacement
    assert replacement["provenance"] == {"requested_by": "http", "job_id": None}
    assert replacement["content_hash"] != old["content_hash"]

    # What the route answered is what is stored; the name now leads to the replacement and the
    # old drawer stays reachable by id.
    assert drawer(client, old["id"]) == closed
    assert drawer(client, replacement["id"]) == replacement
    by_name = client.get(f"/api/wings/{wing_name}/rooms/ops/drawers/deploy")
    assert by_name.json() == replacement
    # Both are listed: a listing shows superseded drawers too.
    listing = client.get(f"/api/wings/{wing_name}/rooms/ops/drawers").json()
    assert [entry["id"] for entry in listing["drawers"]] == [old["id"], replacement["id"]]
    assert listing["total"] == 2


def test_supersede_keeps_or_replaces_the_tags_and_records_the_channel(
    client: httpx.Client, wing_name: str
) -> None:
    first = file(client, wing_name, "r", "tagged one", tags=["a", "b"])
    kept = supersede(client, first["id"], content="tagged two")["replacement"]
    assert kept["tags"] == ["a", "b"]
    assert kept["name"] is None, "an unnamed drawer's replacement is unnamed"

    replaced = supersede(client, kept["id"], content="tagged three", tags=["c"])["replacement"]
    assert replaced["tags"] == ["c"]

    cleared = supersede(client, replaced["id"], content="tagged four", tags=[], requested_by="cli")
    assert cleared["replacement"]["tags"] == []
    assert cleared["replacement"]["provenance"] == {"requested_by": "cli", "job_id": None}
    # The closed drawer keeps the provenance of its own write.
    assert cleared["superseded"]["provenance"] == {"requested_by": "http", "job_id": None}
    assert cleared["superseded"]["tags"] == ["c"]


@pytest.mark.parametrize("body", [{}, {"content": None}, {"tags": ["ignored"]}])
def test_supersede_without_content_invalidates(
    client: httpx.Client, wing_name: str, body: dict[str, Any]
) -> None:
    old = file(client, wing_name, "r", "The office is on the 3rd floor.", name="office")
    answer = supersede(client, old["id"], **body)
    assert answer["replacement"] is None
    closed = answer["superseded"]
    assert closed["valid_to"] is not None
    assert instant(closed["valid_to"]) >= instant(old["valid_from"])
    assert "superseded_by" not in closed
    assert closed["tags"] == old["tags"] == []
    assert closed["content"] == old["content"]
    assert drawer(client, old["id"]) == closed
    assert room_count(client, wing_name, "r") == 1

    only = history(client, old["id"])
    assert only["versions"] == [closed]


def test_an_invalidated_drawer_gives_up_its_name(client: httpx.Client, wing_name: str) -> None:
    # The brief and docs/concepts.md ("An invalidated drawer keeps its name") say otherwise;
    # this follows RevisionRepository.supersede, which frees the name on purpose ("the name is
    # free for what is true now").
    old = file(client, wing_name, "r", "The office is on the 3rd floor.", name="office")
    closed = supersede(client, old["id"])["superseded"]
    assert closed["name"] is None
    assert drawer(client, old["id"])["name"] is None
    assert_error(client.get(f"/api/wings/{wing_name}/rooms/r/drawers/office"), 404, NOT_FOUND)
    # The name is free again, even for the very same words.
    refiled = file(client, wing_name, "r", "The office is on the 3rd floor.", name="office")
    assert refiled["id"] != old["id"]
    assert refiled["valid_to"] is None
    moved = file(client, wing_name, "other", "The office is on the 4th floor.", name="office")
    assert moved["name"] == "office"


def test_a_closed_drawer_cannot_be_superseded_again(client: httpx.Client, wing_name: str) -> None:
    old = file(client, wing_name, "r", "version one")
    replacement = supersede(client, old["id"], content="version two")["replacement"]
    invalidated = file(client, wing_name, "r", "soon untrue")
    supersede(client, invalidated["id"])
    chain_before = history(client, old["id"])
    invalidated_before = drawer(client, invalidated["id"])

    for closed_id in (old["id"], invalidated["id"]):
        for body in ({"content": "another try"}, {}):
            refused = assert_error(
                client.post(f"/api/drawers/{closed_id}/supersede", json=body), 409, SUPERSEDED
            )
            assert closed_id in refused["error"]

    # Nothing changed: the chain is the same and nothing new was filed.
    assert history(client, replacement["id"])["versions"] == chain_before["versions"]
    assert drawer(client, invalidated["id"]) == invalidated_before
    assert room_count(client, wing_name, "r") == 3


def test_concurrent_supersedes_close_a_drawer_once(daemon: Daemon, wing_name: str) -> None:
    with daemon.client() as client:
        old = file(client, wing_name, "r", "first come, first served")
    statuses: dict[int, int] = {}
    start = threading.Barrier(6)

    def attempt(number: int) -> None:
        with daemon.client() as own:
            start.wait(WAIT)
            response = own.post(
                f"/api/drawers/{old['id']}/supersede", json={"content": f"winner {number}"}
            )
            statuses[number] = response.status_code

    threads = [threading.Thread(target=attempt, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
    assert sorted(statuses.values()) == [200, 409, 409, 409, 409, 409], statuses
    with daemon.client() as client:
        versions = history(client, old["id"])["versions"]
        winner = next(number for number, status in statuses.items() if status == 200)
        assert [version["content"] for version in versions] == [
            "first come, first served",
            f"winner {winner}",
        ]
        assert room_count(client, wing_name, "r") == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "bogus": 1}, "bogus"),
        ({"name": "renamed"}, "name"),
        ({"content": ""}, "content"),
        ({"content": "  \n\t"}, "content"),
        ({"content": 5}, "content"),
        ({"content": "x", "tags": "ops"}, "tags"),
        ({"content": "x", "tags": ["ok", 1]}, "tags"),
        ({"content": "x", "requested_by": ""}, "requested_by"),
        ({"content": "x", "requested_by": "y" * 65}, "requested_by"),
        (["content"], "body"),
    ],
)
def test_supersede_input_is_validated(
    client: httpx.Client, wing_name: str, body: object, field: str
) -> None:
    old = file(client, wing_name, "r", "still true", name="keep", tags=["t"])
    refused = assert_error(
        client.post(f"/api/drawers/{old['id']}/supersede", json=body), 400, INVALID
    )
    assert refused["error"].startswith(f"`{field}`"), refused
    assert drawer(client, old["id"]) == without_created(old)
    assert room_count(client, wing_name, "r") == 1


def test_malformed_and_unknown_ids(client: httpx.Client) -> None:
    for route in ("supersede", "history", "duplicates"):
        method = "POST" if route == "supersede" else "GET"
        bad = assert_error(client.request(method, f"/api/drawers/123/{route}"), 400, INVALID)
        assert bad["error"].startswith("`id`"), bad
        ghost = str(uuid.uuid4())
        missing = assert_error(
            client.request(method, f"/api/drawers/{ghost}/{route}"), 404, NOT_FOUND
        )
        assert ghost in missing["error"]


def test_an_upper_case_id_is_the_same_drawer(client: httpx.Client, wing_name: str) -> None:
    old = file(client, wing_name, "r", "case of the id")
    shouted = old["id"].upper()
    assert history(client, shouted)["drawer"] == old["id"]
    assert similar(client, old["id"]) == []
    replacement = supersede(client, shouted, content="case closed")["replacement"]
    assert replacement["supersedes"] == old["id"]


# History.


def test_three_versions_read_the_same_history_from_any_of_them(
    client: httpx.Client, wing_name: str
) -> None:
    # Verbatim: leading and trailing whitespace, blank lines and non-ASCII text are kept.
    texts = [
        "We host on Heroku.\n",
        "  We host on Fly.io — since März ✓  \n\n",
        "We host on our own metal.\tFinally.",
    ]
    first = file(client, wing_name, "infra", texts[0], name="hosting", tags=["infra"])
    second = supersede(client, first["id"], content=texts[1])["replacement"]
    third = supersede(client, second["id"], content=texts[2], requested_by="cli")["replacement"]

    answers = {version["id"]: history(client, version["id"]) for version in (first, second, third)}
    versions = answers[first["id"]]["versions"]
    for version_id, answer in answers.items():
        assert answer["drawer"] == version_id
        assert answer["versions"] == versions, f"history read from {version_id} differs"

    assert [version["id"] for version in versions] == [first["id"], second["id"], third["id"]]
    assert [version["content"] for version in versions] == texts
    # Each version is the stored drawer verbatim.
    for version in versions:
        assert version == drawer(client, version["id"])
    # The periods tile the timeline, and the links point both ways.
    for earlier, later in itertools.pairwise(versions):
        assert earlier["valid_to"] == later["valid_from"]
        assert instant(earlier["valid_from"]) < instant(later["valid_from"])
        assert earlier["superseded_by"] == later["id"]
        assert later["supersedes"] == earlier["id"]
    assert "supersedes" not in versions[0]
    assert versions[-1]["valid_to"] is None
    assert "superseded_by" not in versions[-1]
    # The name and the tags travelled with the knowledge to its newest version.
    assert [version["name"] for version in versions] == [None, None, "hosting"]
    assert [version["tags"] for version in versions] == [["infra"]] * 3
    assert [version["provenance"]["requested_by"] for version in versions] == [
        "http",
        "http",
        "cli",
    ]


def test_history_ends_with_an_invalidation(client: httpx.Client, wing_name: str) -> None:
    first = file(client, wing_name, "r", "the VPN is needed for staging")
    second = supersede(client, first["id"], content="the VPN is needed for prod only")
    second_id = second["replacement"]["id"]
    closed = supersede(client, second_id)["superseded"]

    versions = history(client, first["id"])["versions"]
    assert [version["id"] for version in versions] == [first["id"], second_id]
    assert versions[0]["valid_to"] == versions[1]["valid_from"]
    assert versions[1]["valid_to"] == closed["valid_to"] is not None
    assert "superseded_by" not in versions[1]
    assert history(client, second_id)["versions"] == versions


def test_history_of_a_drawer_nobody_corrected_is_one_version(
    client: httpx.Client, wing_name: str
) -> None:
    lone = file(client, wing_name, "r", "never corrected", tags=["x"])
    answer = history(client, lone["id"])
    assert answer["drawer"] == lone["id"], "`drawer` is the id asked about"
    assert answer["versions"] == [without_created(lone)]


# Deduplication.


def test_an_exact_unnamed_copy_is_not_stored_again(client: httpx.Client, wing_name: str) -> None:
    original = file(client, wing_name, "r", "Backups run at 02:00 UTC.", tags=["ops"])
    again = file(client, wing_name, "r", "Backups run at 02:00 UTC.", status=200, tags=["other"])
    assert without_created(again) == without_created(original)
    assert room_count(client, wing_name, "r") == 1
    assert similar(client, original["id"]) == []

    # An exact copy in another room of the same wing is another room's business.
    elsewhere = file(client, wing_name, "r2", "Backups run at 02:00 UTC.")
    assert elsewhere["id"] != original["id"]
    assert similar(client, elsewhere["id"]) == []
    assert similar(client, original["id"]) == []


def test_an_unnamed_copy_of_a_named_drawer_answers_the_named_one(
    client: httpx.Client, wing_name: str
) -> None:
    named = file(client, wing_name, "r", "Releases are tagged vX.Y.Z.", name="release")
    again = file(client, wing_name, "r", "Releases are tagged vX.Y.Z.", status=200)
    assert again["id"] == named["id"]
    same_name = file(
        client, wing_name, "r", "Releases are tagged vX.Y.Z.", status=200, name="release"
    )
    assert same_name["id"] == named["id"]
    assert room_count(client, wing_name, "r") == 1


def test_a_case_and_punctuation_variant_is_linked_as_normalized(
    client: httpx.Client, wing_name: str
) -> None:
    older = file(client, wing_name, "r", "The cache lives in Redis.")
    newer = file(client, wing_name, "r", "the CACHE   lives in redis!")
    assert newer["id"] != older["id"]
    assert newer["fingerprint"] == older["fingerprint"]
    assert newer["content_hash"] != older["content_hash"]
    assert room_count(client, wing_name, "r") == 2

    [link] = similar(client, newer["id"])
    assert link["drawer"] == drawer(client, older["id"])
    assert link["side"] == "older"
    assert link["kind"] == "normalized"
    assert link["similarity"] == 1.0
    assert link["signals"] == {
        "same_hash": False,
        "same_fingerprint": True,
        "similarity": 1.0,
        "threshold": 0.9,
    }
    assert link["created_at"] == newer["created_at"]

    [back] = similar(client, older["id"])
    assert back["drawer"] == drawer(client, newer["id"])
    assert back["side"] == "newer"
    assert {key: back[key] for key in ("kind", "similarity", "signals", "created_at")} == {
        key: link[key] for key in ("kind", "similarity", "signals", "created_at")
    }


def test_a_typo_variant_is_linked_as_near(client: httpx.Client, wing_name: str) -> None:
    text = "We deploy the backend on Fridays after lunch."
    older = file(client, wing_name, "r", text)
    # One adjacent transposition is one edit of the 45 normalized characters.
    newer = file(client, wing_name, "r", "We deploy the backend on Fridyas after lunch.")
    normalized = "we deploy the backend on fridays after lunch"
    expected = round(1 - 1 / len(normalized), 4)

    [link] = similar(client, newer["id"])
    assert link["drawer"]["id"] == older["id"]
    assert (link["side"], link["kind"]) == ("older", "near")
    assert link["similarity"] == expected
    assert link["signals"] == {
        "same_hash": False,
        "same_fingerprint": False,
        "similarity": expected,
        "threshold": 0.9,
    }
    [back] = similar(client, older["id"])
    assert (back["drawer"]["id"], back["side"], back["kind"]) == (newer["id"], "newer", "near")

    # Far below the threshold: stored, and linked to nothing.
    other = file(client, wing_name, "r", "We deploy the frontend on Tuesdays before noon.")
    assert similar(client, other["id"]) == []
    assert room_count(client, wing_name, "r") == 3


def test_a_near_copy_edited_near_its_start_is_linked(client: httpx.Client, wing_name: str) -> None:
    older = file(client, wing_name, "r", "The quick brown fox jumps over the lazy dog.")
    newer = file(client, wing_name, "r", "Teh quick brown fox jumps over the lazy dog.")
    [link] = similar(client, newer["id"])
    assert (link["drawer"]["id"], link["side"], link["kind"]) == (older["id"], "older", "near")
    assert link["similarity"] == round(1 - 1 / 43, 4)


def test_a_near_copy_edited_at_both_ends_is_not_linked(
    client: httpx.Client, wing_name: str
) -> None:
    # docs/concepts.md: candidates share the first or the last 24 normalized characters, so "a
    # near copy edited at both ends is not found, and not linked", though its similarity
    # (0.9524) is over the threshold. palace.md section 7 of the shared spec found candidates
    # by full-text search instead, and would link these two.
    older = file(client, wing_name, "r", "Always run the formatter before committing.")
    newer = file(client, wing_name, "r", "Always run the formater before comitting.")
    assert similar(client, newer["id"]) == []
    assert similar(client, older["id"]) == []
    assert room_count(client, wing_name, "r") == 2


def test_short_texts_are_only_exact_or_normalized_copies(
    client: httpx.Client, wing_name: str
) -> None:
    # 11 normalized characters and one typo: similar enough (0.909), but too short to judge.
    eleven = file(client, wing_name, "r", "big red fox")
    typo = file(client, wing_name, "r", "big red fix")
    assert similar(client, typo["id"]) == []
    assert similar(client, eleven["id"]) == []
    # Short texts still match when only case and punctuation differ.
    shouted = file(client, wing_name, "r", "BIG RED FOX!")
    [link] = similar(client, shouted["id"])
    assert (link["drawer"]["id"], link["kind"]) == (eleven["id"], "normalized")


def test_a_named_exact_copy_is_stored_and_linked_as_exact(
    client: httpx.Client, wing_name: str
) -> None:
    older = file(client, wing_name, "r", "Use UTC everywhere.", name="time/utc.md")
    newer = file(client, wing_name, "r", "Use UTC everywhere.", name="time/utc-copy.md")
    assert newer["id"] != older["id"]
    assert newer["content_hash"] == older["content_hash"]

    [link] = similar(client, newer["id"])
    assert (link["drawer"]["id"], link["side"], link["kind"]) == (older["id"], "older", "exact")
    assert link["signals"] == {
        "same_hash": True,
        "same_fingerprint": True,
        "similarity": 1.0,
        "threshold": 0.9,
    }
    [back] = similar(client, older["id"])
    assert (back["drawer"]["id"], back["side"], back["kind"]) == (newer["id"], "newer", "exact")

    # A third copy links to both earlier ones, and each pair only once.
    third = file(client, wing_name, "r", "Use UTC everywhere.", name="time/utc-again.md")
    links = similar(client, third["id"])
    assert sorted(link["drawer"]["id"] for link in links) == sorted([older["id"], newer["id"]])
    assert {(link["side"], link["kind"]) for link in links} == {("older", "exact")}
    assert sorted(link["drawer"]["id"] for link in similar(client, older["id"])) == sorted(
        [newer["id"], third["id"]]
    )
    assert [link["side"] for link in similar(client, older["id"])] == ["newer", "newer"]
    sides = {link["drawer"]["id"]: link["side"] for link in similar(client, newer["id"])}
    assert sides == {older["id"]: "older", third["id"]: "newer"}


def test_closed_drawers_are_not_copy_candidates(client: httpx.Client, wing_name: str) -> None:
    superseded = file(client, wing_name, "r", "The build server is called Jenkins-01.")
    supersede(client, superseded["id"], content="The build runs on GitHub Actions now.")
    invalidated = file(client, wing_name, "r", "Standup is at 09:15 every weekday.")
    supersede(client, invalidated["id"])

    # Exact copies of closed drawers are stored anew, and nothing links them to the old ones.
    for old in (superseded, invalidated):
        again = file(client, wing_name, "r", old["content"])
        assert again["id"] != old["id"]
        assert similar(client, again["id"]) == []
        assert similar(client, old["id"]) == []
    # Nor are variants of them.
    variant = file(client, wing_name, "r", "the build server is called jenkins 01")
    assert [link["drawer"]["content"] for link in similar(client, variant["id"])] == [
        "The build server is called Jenkins-01."
    ], "only the current copy filed above is a candidate"
    assert room_count(client, wing_name, "r") == 6


def test_a_replacement_is_checked_for_copies_like_any_write(
    client: httpx.Client, wing_name: str
) -> None:
    kept = file(client, wing_name, "r", "Payments go through Stripe.")
    wrong = file(client, wing_name, "r", "Payments go through PayPal.")
    replacement = supersede(client, wrong["id"], content="payments go through stripe")[
        "replacement"
    ]
    links = similar(client, replacement["id"])
    assert [(link["drawer"]["id"], link["side"], link["kind"]) for link in links] == [
        (kept["id"], "older", "normalized")
    ]
    # Superseded with the very same text: the replacement is not linked to itself, nor to the
    # drawer it closed.
    same = supersede(client, kept["id"], content="Payments go through Stripe.")["replacement"]
    assert [link["drawer"]["id"] for link in similar(client, same["id"])] == [replacement["id"]]


def test_deleting_a_drawer_removes_its_links(client: httpx.Client, wing_name: str) -> None:
    older = file(client, wing_name, "r", "Logs are kept for 30 days.")
    newer = file(client, wing_name, "r", "logs are kept for 30 days")
    assert len(similar(client, newer["id"])) == 1
    deleted = client.delete(f"/api/wings/{wing_name}/rooms/r/drawers/{older['id']}")
    assert deleted.json() == {"wings": 0, "rooms": 0, "drawers": 1}
    assert similar(client, newer["id"]) == []


def test_without_dedup_copies_are_stored_and_nothing_is_linked(fresh_daemon: Daemon) -> None:
    fresh_daemon.env["MEMCASTLE_DEDUP_ENABLED"] = "false"
    fresh_daemon.start()
    wing = "nodedup"
    with fresh_daemon.client() as client:
        first = file(client, wing, "r", "Exactly the same words.")
        second = file(client, wing, "r", "Exactly the same words.")
        variant = file(client, wing, "r", "exactly the SAME words")
        typo = file(client, wing, "r", "Exactyl the same words.")
        named = file(client, wing, "r", "Exactly the same words.", name="named")
        ids = [first["id"], second["id"], variant["id"], typo["id"], named["id"]]
        assert len(set(ids)) == 5
        assert room_count(client, wing, "r") == 5
        for drawer_id in ids:
            assert similar(client, drawer_id) == []
        # A named drawer is still the same drawer when filed again under its name.
        assert (
            file(client, wing, "r", "Exactly the same words.", status=200, name="named")["id"]
            == named["id"]
        )

        notes = [
            client.post("/api/notes", json={"wing": wing, "content": "a note twice"})
            for _ in range(2)
        ]
        assert [note.status_code for note in notes] == [201, 201]
        diary = [
            client.post(
                "/api/diary",
                json={"wing": wing, "agent_identity": "bot", "content": "an entry twice"},
            )
            for _ in range(2)
        ]
        assert [entry.status_code for entry in diary] == [201, 201]
        assert notes[0].json()["id"] != notes[1].json()["id"]
        assert diary[0].json()["id"] != diary[1].json()["id"]
        replacement = supersede(client, first["id"], content="Exactly the same words.")
        assert similar(client, replacement["replacement"]["id"]) == []


# Memory modes.


def test_read_only_and_disabled_refuse_corrections_and_change_nothing(
    client: httpx.Client, wing_name: str
) -> None:
    old = file(client, wing_name, "r", "only a full session may correct me", name="n")
    for mode in ("read_only", "disabled"):
        headers = {"X-MemCastle-Mode": mode}
        for body in ({"content": "corrected"}, {}, {"bogus": True}):
            refused = assert_error(
                client.post(f"/api/drawers/{old['id']}/supersede", json=body, headers=headers),
                403,
                FORBIDDEN,
            )
            assert refused["error"] == f"`supersede` is not permitted in {mode} mode"
        refused = assert_error(
            client.post(
                f"/api/wings/{wing_name}/rooms/r/drawers",
                json={"content": "not while read-only"},
                headers=headers,
            ),
            403,
            FORBIDDEN,
        )
        assert refused["error"] == f"`create_drawer` is not permitted in {mode} mode"
        # Not even a copy that would not have been stored.
        assert_error(
            client.post(
                f"/api/wings/{wing_name}/rooms/r/drawers",
                json={"content": old["content"], "name": "n"},
                headers=headers,
            ),
            403,
            FORBIDDEN,
        )
        assert_error(
            client.post(
                f"/api/wings/{wing_name}-{mode}/rooms/r/drawers",
                json={"content": "would create a wing"},
                headers=headers,
            ),
            403,
            FORBIDDEN,
        )
        assert_error(
            client.get(f"/api/wings/{wing_name}-{mode}"), 404, "memcastle::palace::wing_not_found"
        )
    assert drawer(client, old["id"]) == without_created(old)
    assert history(client, old["id"])["versions"] == [without_created(old)]
    assert room_count(client, wing_name, "r") == 1

    bogus = assert_error(
        client.post(
            f"/api/drawers/{old['id']}/supersede",
            json={"content": "x"},
            headers={"X-MemCastle-Mode": "everything"},
        ),
        400,
        INVALID,
    )
    assert bogus["error"].startswith("`x-memcastle-mode`")
    assert drawer(client, old["id"])["valid_to"] is None


def test_history_and_duplicates_are_reads(client: httpx.Client, wing_name: str) -> None:
    older = file(client, wing_name, "r", "Reads are allowed when read-only.")
    newer = supersede(client, older["id"], content="reads are allowed when READ-ONLY")
    newer_id = newer["replacement"]["id"]
    full_history = history(client, newer_id)
    full_links = client.get(f"/api/drawers/{older['id']}/duplicates").json()

    read_only_history = client.get(f"/api/drawers/{newer_id}/history", headers=READ_ONLY)
    assert read_only_history.status_code == 200
    assert read_only_history.json() == full_history
    read_only_links = client.get(f"/api/drawers/{older['id']}/duplicates", headers=READ_ONLY)
    assert read_only_links.status_code == 200
    assert read_only_links.json() == full_links

    for route, operation in (("history", "history"), ("duplicates", "duplicates")):
        refused = assert_error(
            client.get(f"/api/drawers/{newer_id}/{route}", headers=DISABLED), 403, FORBIDDEN
        )
        assert refused["error"] == f"`{operation}` is not permitted in disabled mode"


# Events.


def wait_drawer_frame(stream: EventStream, drawer_id: str, action: str) -> Frame:
    frame = stream.wait(
        lambda item: (
            isinstance(item, Frame)
            and item.event == "drawer"
            and item.data.get("id") == drawer_id
            and item.data.get("action") == action
        ),
        what=f"the drawer {action} frame of {drawer_id}",
    )
    assert isinstance(frame, Frame)
    return frame


def test_corrections_publish_drawer_events(
    client: httpx.Client, stream: EventStream, wing_name: str
) -> None:
    old = file(client, wing_name, "r", "The wiki moved to Notion.")
    file(client, wing_name, "r", "The wiki moved to Notion.", status=200)
    replacement = supersede(client, old["id"], content="The wiki moved to Confluence.")[
        "replacement"
    ]
    supersede(client, replacement["id"])
    assert_error(
        client.post(f"/api/drawers/{old['id']}/supersede", json={"content": "again"}),
        409,
        SUPERSEDED,
    )
    bystander = file(client, wing_name, "r", "A drawer nobody corrects.")
    assert_error(
        client.post(
            f"/api/drawers/{bystander['id']}/supersede", json={"content": "no"}, headers=READ_ONLY
        ),
        403,
        FORBIDDEN,
    )
    # Frames arrive in order: once the last write's frame is here, every earlier one is too.
    sentinel = file(client, wing_name, "r", "The last write of this test.")
    wait_drawer_frame(stream, sentinel["id"], "created")

    place = {"wing": old["wing"], "room": old["room"]}
    frames = [frame.data for frame in stream.frames("drawer", wing=old["wing"])]
    assert frames == [
        {"kind": "drawer", "action": "created", "id": old["id"], **place},
        {"kind": "drawer", "action": "updated", "id": old["id"], **place},
        {"kind": "drawer", "action": "created", "id": replacement["id"], **place},
        {"kind": "drawer", "action": "updated", "id": replacement["id"], **place},
        {"kind": "drawer", "action": "created", "id": bystander["id"], **place},
        {"kind": "drawer", "action": "created", "id": sentinel["id"], **place},
    ]
    for frame in stream.frames("drawer", wing=old["wing"]):
        assert "Notion" not in frame.raw and "Confluence" not in frame.raw


# Deletes while a job that writes to the palace is pending.


def act(client: httpx.Client, job_id: str, action: str) -> Job:
    response = client.post(f"/api/jobs/{job_id}/{action}")
    assert response.status_code == 200, response.text
    return response.json()


def test_deletes_wait_for_jobs_that_write_to_the_palace(fresh_daemon: Daemon) -> None:
    fresh_daemon.env["MEMCASTLE_JOBS_MAX_CONCURRENCY"] = "1"
    fresh_daemon.start()
    wing = "busy"
    with fresh_daemon.client() as client:
        for room in ("r1", "r2", "r3"):
            file(client, wing, room, f"a drawer in {room}")

        # The one worker is busy for a long while, so whatever is submitted next stays queued.
        long_demo = submit(client, {"type": "demo", "steps": 1000, "step_ms": 50})
        watch(
            client,
            long_demo["id"],
            lambda job: job["status"] == "running" and "total" in job["progress"],
            "the long demo to run",
            timeout=WAIT,
        )
        queued_demo = submit(client, {"type": "demo", "steps": 1, "step_ms": 0})
        dry_run = submit(client, {"type": "repair"})
        assert dry_run["kind"] == {"type": "repair", "dry_run": True}

        # Demos and a dry-run repair write nothing to the palace: deletes go ahead.
        assert get_job(client, queued_demo["id"])["status"] == "queued"
        assert get_job(client, dry_run["id"])["status"] == "queued"
        deleted = client.delete(f"/api/wings/{wing}/rooms/r3")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {"wings": 0, "rooms": 1, "drawers": 1}

        before = client.get(f"/api/wings/{wing}").json()
        assert before["counts"] == {"rooms": 2, "drawers": 2}

        # An applying repair holds deletes off while it is queued ...
        applying = submit(client, {"type": "repair", "dry_run": False})
        assert get_job(client, applying["id"])["status"] == "queued"
        refused = assert_error(client.delete(f"/api/wings/{wing}"), 409, BUSY)
        assert "repair" in refused["error"]
        assert act(client, applying["id"], "cancel")["status"] == "cancelled"

        # ... and so does a checkpoint.
        checkpoint = submit(
            client,
            {
                "type": "checkpoint",
                "payload": {
                    "items": [
                        {
                            "destination": "project",
                            "wing": wing,
                            "content": "filed by the checkpoint once it runs",
                            "tags": [],
                        }
                    ]
                },
            },
        )
        assert get_job(client, checkpoint["id"])["status"] == "queued"
        for path in (f"/api/wings/{wing}", f"/api/wings/{wing}/rooms/r1"):
            refused = assert_error(client.delete(path), 409, BUSY)
            assert "checkpoint" in refused["error"]
        assert client.get(f"/api/wings/{wing}").json() == before
        assert room_count(client, wing, "r1") == 1

        # Once the worker is free the checkpoint runs, and then the delete goes ahead, with the
        # drawer the checkpoint filed.
        act(client, long_demo["id"], "force-cancel")
        done = watch(
            client,
            checkpoint["id"],
            lambda job: job["status"] in ("completed", "failed", "cancelled"),
            "the checkpoint to end",
            timeout=WAIT,
        )
        assert done["status"] == "completed", done
        assert done["result"] == {"items": 1, "duplicates": 0}
        # The demo and the dry run do not hold the delete off, whether queued or done.
        deleted = client.delete(f"/api/wings/{wing}")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {"wings": 1, "rooms": 3, "drawers": 3}
        assert_error(client.get(f"/api/wings/{wing}"), 404, "memcastle::palace::wing_not_found")
        for job in (queued_demo, dry_run):
            watch(
                client,
                job["id"],
                lambda job: job["status"] == "completed",
                "the job to complete",
                timeout=WAIT,
            )
